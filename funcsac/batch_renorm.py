"""Batch renormalisation (Ioffe 2017) as a pure function, the normalisation of CrossQ's critics,
and plain batch normalisation (FlashSAC's), the same function without the correction.

The running statistics are buffers of the layer and so leaves of the state: a training-mode call
returns their new values instead of writing them, and the optimiser never sees them.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple, Union

import torch
from torch import nn


class BatchRenorm(nn.Module):
    """Batch renormalisation over the last dimension of ``[B, features]`` inputs.

    Training mode (``batch_renorm(..., train=True)``) normalises with the batch's statistics,
    corrected towards the running ones by ``r = clip(std_B / std_run, 1 / r_max, r_max)`` and
    ``d = clip((mean_B - mean_run) / std_run, -d_max, d_max)`` (both without gradient): with the
    mean ``mean_B - d * sqrt(var_B) / r`` and the variance ``var_B / r^2``; for the first
    ``warmup_steps`` training calls ``r = 1`` and ``d = 0``, plain batch normalisation. The
    running statistics move by ``momentum`` towards the batch's mean and (biased) variance.
    Evaluation mode (``forward``) normalises with the running statistics. This is the layer of
    sbx's CrossQ and of the CrossQ paper's code (``jax_layers.BatchRenorm``), its defaults too
    (momentum 0.01 here is flax's 0.99).
    """

    renorm = True  # corrects towards the running statistics (after warmup_steps)
    unbiased = False  # the running variance moves towards the batch's biased variance

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


class BatchNorm(nn.Module):
    """Plain batch normalisation over the last dimension of ``[B, features]`` inputs, as torch's
    ``BatchNorm1d`` computes it and FlashSAC's ``UnitBatchNorm`` (leeyngdo/FlashSAC
    ``flash_rl/agents/flashSAC/layer.py``): training mode normalises with the batch's mean and
    biased variance, and the running statistics move by ``momentum`` towards the batch's mean and
    unbiased variance (``B / (B - 1)`` times the biased); evaluation mode normalises with the
    running statistics. ``batch_renorm`` applies it (never correcting)."""

    renorm = False
    unbiased = True

    def __init__(self, features: int, momentum: float = 0.01, eps: float = 1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return batch_renorm(self, self._parameters | self._buffers, "", x, train=False)[0]


def batch_renorm(layer: Union[BatchRenorm, BatchNorm], params: Dict[str, torch.Tensor],
                 prefix: str, x: torch.Tensor, train: bool) -> Tuple[torch.Tensor, Optional[Dict]]:
    """``layer`` (batch renormalisation, or plain batch normalisation) applied to ``x [B, F]``
    with the tensors ``params[prefix + name]``; returns ``(y [B, F], new buffers by their names
    in params)`` in training mode, ``(y, None)`` otherwise."""
    get = lambda name: params[prefix + name]  # noqa: E731
    mean, var = get("running_mean"), get("running_var")
    if not train:
        y = (x - mean) * torch.rsqrt(var + layer.eps)
        return y * get("weight") + get("bias"), None
    batch_mean, batch_var = x.mean(0), x.var(0, correction=0)
    if layer.renorm:
        with torch.no_grad():
            running_std = torch.sqrt(var + layer.eps)
            warm = get("steps") >= layer.warmup_steps
            r = torch.where(warm, (torch.sqrt(batch_var + layer.eps) / running_std).clamp(
                1.0 / layer.r_max, layer.r_max), 1.0)
            d = torch.where(warm, ((batch_mean - mean) / running_std).clamp(
                -layer.d_max, layer.d_max), 0.0)
        renorm_mean = batch_mean - d * _sqrt(batch_var) / r
        y = (x - renorm_mean) * torch.rsqrt(batch_var / r.square() + layer.eps)
    else:
        y = (x - batch_mean) * torch.rsqrt(batch_var + layer.eps)
    y = y * get("weight") + get("bias")
    seen_var = batch_var.detach()
    if layer.unbiased:
        seen_var = seen_var * (x.shape[0] / (x.shape[0] - 1))
    m = layer.momentum
    new = {"running_mean": mean + m * (batch_mean.detach() - mean),
           "running_var": var + m * (seen_var - var)}
    if layer.renorm:
        new["steps"] = get("steps") + 1
    return y, {prefix + k: v for k, v in new.items()}

def _sqrt(x: torch.Tensor) -> torch.Tensor:
    """``sqrt(x)`` for ``x >= 0`` with a zero gradient where ``x`` is 0 (a feature constant over
    the batch), where the plain square root's would be infinite."""
    positive = x > 0
    return torch.where(positive, torch.sqrt(torch.where(positive, x, 1.0)), 0.0)
