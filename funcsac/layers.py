"""Layers funcsac's networks are made of, beside torch's: dropout whose masks come from a key,
a residual block, and a linear layer's product taken weight first."""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from . import keys


class KeyedDropout(nn.Module):
    """Dropout whose mask is drawn from a key, so it stays pure and vmappable.

    The key arrives as the buffer ``key`` in the dict given to ``functional_call`` (the apply
    functions of ``funcsac.networks`` fill it in); without one the layer is the identity, as in
    evaluation.
    """

    def __init__(self, p: float):
        super().__init__()
        self.p = p
        self.register_buffer("key", None, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(x, self.key)

    def drop(self, x: torch.Tensor, key: Optional[torch.Tensor]) -> torch.Tensor:
        """``x`` with the mask drawn from ``key`` applied (``x`` itself when ``key`` is None)."""
        if key is None:
            return x
        keep = keys.uniform(key, x.shape, x.dtype) >= self.p
        return torch.where(keep, x / (1.0 - self.p), torch.zeros_like(x))


class Residual(nn.Sequential):
    """A skip connection around a sequence of layers: ``x + layers(x)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + super().forward(x)
