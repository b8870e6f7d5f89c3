"""Batch renormalisation (Ioffe 2017) as a pure function, the normalisation of CrossQ's critics.

The running statistics are buffers of the layer and so leaves of the state: a training-mode call
returns their new values instead of writing them, and the optimiser never sees them.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch
from torch import nn


class BatchRenorm(nn.Module):
    """Batch renormalisation over the last dimension of ``[B, features]`` inputs.

    Training mode (``batch_renorm(..., train=True)``) normalises with the batch's mean and
    standard deviation, corrected towards the running ones by ``r = clip(std_B / std_run,
    1 / r_max, r_max)`` and ``d = clip((mean_B - mean_run) / std_run, -d_max, d_max)`` (both without
    gradient); for the first ``warmup_steps`` training calls ``r = 1`` and ``d = 0``, plain batch
    normalisation. The running statistics move by ``momentum`` towards the batch's (its unbiased
    variance). Evaluation mode (``forward``) normalises with the running statistics. The defaults
    are sbx's CrossQ ones (momentum 0.01 here is flax's 0.99).
    """

    def __init__(self, features: int, momentum: float = 0.01, eps: float = 1e-3,
                 r_max: float = 3.0, d_max: float = 5.0, warmup_steps: int = 100_000):
        super().__init__()
        self.momentum, self.eps, self.r_max, self.d_max = momentum, eps, r_max, d_max
        self.warmup_steps = warmup_steps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return batch_renorm(self, self._parameters | self._buffers, "", x, train=False)[0]


def batch_renorm(layer: BatchRenorm, params: Dict[str, torch.Tensor], prefix: str,
                 x: torch.Tensor, train: bool) -> Tuple[torch.Tensor, Optional[Dict]]:
    """``layer`` applied to ``x [B, F]`` with the tensors ``params[prefix + name]``; returns
    ``(y [B, F], new buffers by their names in params)`` in training mode, ``(y, None)``
    otherwise."""
    get = lambda name: params[prefix + name]  # noqa: E731
    mean, var = get("running_mean"), get("running_var")
    if not train:
        y = (x - mean) * torch.rsqrt(var + layer.eps)
        return y * get("weight") + get("bias"), None
    batch_mean, batch_var = x.mean(0), x.var(0, correction=0)
    std = torch.sqrt(batch_var + layer.eps)
    with torch.no_grad():
        running_std = torch.sqrt(var + layer.eps)
        warm = get("steps") >= layer.warmup_steps
        r = torch.where(warm, (std / running_std).clamp(1.0 / layer.r_max, layer.r_max), 1.0)
        d = torch.where(warm, ((batch_mean - mean) / running_std).clamp(-layer.d_max, layer.d_max),
                        0.0)
    y = ((x - batch_mean) / std * r + d) * get("weight") + get("bias")
    n = x.shape[0]
    m = layer.momentum
    new = {"running_mean": mean + m * (batch_mean.detach() - mean),
           "running_var": var + m * (batch_var.detach() * n / max(n - 1, 1) - var),
           "steps": get("steps") + 1}
    return y, {prefix + k: v for k, v in new.items()}
