"""The tanh-squashed Gaussian policy: sampling and log-probabilities."""
from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from . import keys

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def tanh_gaussian_log_prob(mean: torch.Tensor, log_std: torch.Tensor,
                           pre_tanh: torch.Tensor) -> torch.Tensor:
    """``log pi(tanh(u))`` for pre-squash samples ``u [B, act]``, summed over actions -> ``[B]``.

    Uses ``log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))``, exact and stable for large |u|.
    """
    z = (pre_tanh - mean) * torch.exp(-log_std)
    gaussian = -0.5 * z.square() - log_std - _HALF_LOG_2PI
    log_det = 2.0 * (math.log(2.0) - pre_tanh - F.softplus(-2.0 * pre_tanh))
    return (gaussian - log_det).sum(-1)


def gaussian_pre_tanh(mean: torch.Tensor, log_std: torch.Tensor, key: Optional[torch.Tensor],
                      noise: Optional[torch.Tensor] = None) -> torch.Tensor:
    """A reparameterised pre-squash sample ``mean + exp(log_std) * noise`` [B, act]; ``noise``
    (standard normal, shaped like ``mean``) is drawn from ``key`` unless given. ``tanh`` of the
    sample is the action."""
    if noise is None:
        noise = keys.normal(key, mean.shape, mean.dtype)
    return mean + torch.exp(log_std) * noise


def tanh_gaussian_sample(mean: torch.Tensor, log_std: torch.Tensor,
                         key: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised sample: ``(action [B, act] in (-1, 1), log_prob [B])``, noise from ``key``."""
    pre_tanh = gaussian_pre_tanh(mean, log_std, key)
    return torch.tanh(pre_tanh), tanh_gaussian_log_prob(mean, log_std, pre_tanh)
