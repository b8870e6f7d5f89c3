"""SAC's three losses as pure functions of their parameters (the first argument is differentiated).

Shapes: ``B`` batch rows, ``N`` critics, ``A`` action dimensions.
"""
from __future__ import annotations

from typing import Tuple

import torch

from . import keys
from .networks import Params, apply_actor, apply_critics
from .policy import tanh_gaussian_sample
from .state import Static


def critic_loss(critic: Params, static: Static, obs: torch.Tensor, action: torch.Tensor,
                target_q: torch.Tensor, key: torch.Tensor,
                weight: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """``0.5 * mean_B weight * (Q_i - target)^2`` summed over the N critics (``key`` draws any
    dropout masks; ``weight [B]`` is ``Batch.weight``, ones unless replay is prioritized);
    returns ``(loss, Q [N, B])``."""
    q = apply_critics(static.critic, critic, obs, action, key)
    return 0.5 * (weight * (q - target_q).square()).mean(-1).sum(0), q


def sample_action(actor: Params, static: Static, obs: torch.Tensor,
                  key: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """``a ~ pi(.|obs)`` reparameterised with ``key``: ``(action [B, A], log_prob [B])``."""
    cfg = static.config
    mean, log_std = apply_actor(static.actor, actor, obs, cfg.log_std_min, cfg.log_std_max)
    return tanh_gaussian_sample(mean, log_std, key)


def actor_loss(actor: Params, critic: Params, static: Static, obs: torch.Tensor,
               alpha: torch.Tensor, key: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """``mean_B(alpha * log pi(a|s) - Q(s, a))``, ``a ~ pi(.|s)`` reparameterised with ``key``
    (which also draws any critic dropout masks).

    Q is the min (or mean, per ``config.actor_q_reduction``) over the N critics. Returns
    ``(loss, log_prob [B])``.
    """
    cfg = static.config
    k_sample, k_dropout = keys.split(key, 2)
    a, log_prob = sample_action(actor, static, obs, k_sample)
    q = reduce_critics(apply_critics(static.critic, critic, obs, a, k_dropout),
                       cfg.actor_q_reduction)
    return (alpha * log_prob - q).mean(), log_prob


def reduce_critics(q: torch.Tensor, how: str) -> torch.Tensor:
    """The critics' values ``q [N, ...]`` combined over the ensemble: their ``"min"`` or
    ``"mean"``, ``[...]``."""
    return q.min(0).values if how == "min" else q.mean(0)


def temperature_loss(log_alpha: torch.Tensor, log_prob: torch.Tensor,
                     target_entropy: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """``-log_alpha * mean_B(log pi + target_entropy)``; the gradient raises alpha when the
    entropy ``-log pi`` is below target. Returns ``(loss, loss)`` for a uniform signature."""
    loss = -log_alpha * (log_prob + target_entropy).mean()
    return loss, loss
