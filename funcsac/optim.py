"""Functional Adam / AdamW over parameter dicts, with optional global-norm clipping.

``adam_init(params) -> AdamState`` and ``adam_update(grads, state, params, lr, ...) ->
(new_params, new_state, grad_norm)`` are pure: nothing is modified in place. Moments that decay
below the smallest normal float are flushed to zero, so idle weights never produce denormals, which
slow CPU arithmetic tenfold.
"""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F

from .networks import Params


class AdamState(NamedTuple):
    """Adam's state: step count (0-d int64, exact at any length of run) and first/second moments
    shaped like the params."""

    count: torch.Tensor
    mu: Params
    nu: Params


def adam_init(params: Params) -> AdamState:
    """Zero moments and a zero step count for ``params``."""
    first = next(iter(params.values()))
    zeros = lambda: {k: torch.zeros_like(v) for k, v in params.items()}  # noqa: E731
    return AdamState(torch.zeros((), dtype=torch.int64, device=first.device), zeros(), zeros())


def decayed_lr(lr: torch.Tensor, count: torch.Tensor, decay_to: float, decay_steps: int,
               shape: str = "linear") -> torch.Tensor:
    """The learning rate of an optimiser's step ``count`` (its steps before this one), decayed
    from ``lr`` to ``decay_to * lr`` over ``decay_steps`` steps and constant after, with
    ``f = min(count / decay_steps, 1)``: ``"linear"``, ``lr * (1 - (1 - decay_to) * f)``
    (optax's ``linear_schedule``), or ``"cosine"``, ``lr * (decay_to + (1 - decay_to) * (1 +
    cos(pi f)) / 2)`` (optax's ``cosine_decay_schedule``); ``lr`` itself when ``decay_to`` is
    1."""
    if decay_to == 1.0:
        return lr
    done = (count.to(lr.dtype) / decay_steps).clamp(max=1.0)
    if shape == "cosine":
        return lr * (decay_to + (1.0 - decay_to) * 0.5 * (1.0 + torch.cos(math.pi * done)))
    return lr * (1.0 - (1.0 - decay_to) * done)


def global_norm(tree: Params) -> torch.Tensor:
    """The L2 norm of all tensors of ``tree`` together (0-d)."""
    return torch.sqrt(sum(g.square().sum() for g in tree.values()))


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _flush(x: torch.Tensor) -> torch.Tensor:
    """``x`` with entries below the smallest normal float in magnitude set to zero."""
    return F.hardshrink(x, torch.finfo(x.dtype).tiny)


def adam_update(grads: Params, state: AdamState, params: Params, lr: torch.Tensor, *,
                betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                weight_decay: float = 0.0, decay_mask: Optional[Mapping[str, bool]] = None,
                decoupled: bool = True,
                max_grad_norm: Optional[float] = None) -> Tuple[Params, AdamState, torch.Tensor]:
    """One Adam step; AdamW when ``decoupled`` (weight decay ``lr * wd * p``), else L2 in the grads.

    ``decay_mask`` maps each name to whether weight decay applies to it (static Python bools;
    None: to every parameter).

    ``grad_norm`` is the global norm of ``grads`` before clipping; with ``max_grad_norm`` the
    gradients are scaled by ``min(1, max_grad_norm / (grad_norm + 1e-6))`` as
    ``torch.nn.utils.clip_grad_norm_`` does. The bias corrections are computed in the dtype of
    ``lr`` (a 0-d tensor; a Python float means float64).
    """
    b1, b2 = betas
    grad_norm = global_norm(grads)
    if max_grad_norm is not None:
        scale = torch.clamp(max_grad_norm / (grad_norm + 1e-6), max=1.0)
        grads = {k: g * scale for k, g in grads.items()}
    decays = {k: bool(weight_decay) and (decay_mask is None or decay_mask[k]) for k in params}
    if not decoupled:
        grads = {k: g + weight_decay * params[k] if decays[k] else g for k, g in grads.items()}
    count = state.count + 1
    # b ** count written as exp(count * log b): inductor computes a reused exp once, where it
    # would recompute a pow in every vectorised iteration of every parameter's update loop
    t = count.to(lr.dtype if isinstance(lr, torch.Tensor) else torch.float64)
    step_size = lr / (1 - torch.exp(t * _log(b1)))
    root_bc2 = torch.sqrt(1 - torch.exp(t * _log(b2)))
    mu, nu, new = {}, {}, {}
    for k, p in params.items():
        g = grads[k].contiguous()  # a transposed gradient would make the moments transposed too
        mu[k] = _flush(torch.lerp(state.mu[k], g, 1 - b1))
        nu[k] = _flush(torch.lerp(state.nu[k], g * g, 1 - b2))
        if decays[k] and decoupled:
            p = p * (1 - lr * weight_decay)
        new[k] = p - step_size * mu[k] / (torch.sqrt(nu[k]) / root_bc2 + eps)
    return new, AdamState(count, mu, nu), grad_norm
