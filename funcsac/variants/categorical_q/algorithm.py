"""A categorical critic (C51's projection, Bellemare et al. 2017, as SimbaV2 and FlashSAC train
their critics): ``SACConfig(algorithm="categorical_q")``.

Each of the N critics outputs the logits of a distribution of the return over ``num_bins`` fixed
values ``z_j``, evenly spaced on ``[v_min, v_max]``: ``logits [N, B, K]``, ``Q = sum_j p_j z_j``.
The target moves each value of a target critic's distribution at ``(s', a' ~ pi(.|s'))`` to
``r + gamma^horizon * (1 - terminated) * (z_j - alpha * log pi(a'|s'))``, clips it to the support
and splits its probability between the two nearest values (the projection); the critic loss is
the cross-entropy of each critic's distribution against it. Which target critic's distribution:
per row, the one with the lower expected value (``target_q_reduction="min"``, SimbaV2's clipped
double Q), or their mean (``"mean"``), over a random ``num_target_critics`` of them. The actor
maximises the critics' expected values, combined by ``actor_q_reduction``. A custom
``critic_factory`` must map ``[B, obs_dim + act_dim]`` to ``[B, num_bins]`` logits.

The support must hold the returns: SimbaV2's ``[-5, 5]`` is for rewards scaled to it (its reward
normalisation; here ``scale_rewards``).

Shapes: ``B`` rows, ``N`` critics, ``K`` bins.
"""
from __future__ import annotations

import dataclasses
from typing import Tuple

import torch

from ... import keys
from ...batch import Batch
from ...losses import (ActorOut, CriticOut, Losses, bootstrap, next_policy, policy_loss,
                      reduce_critics, target_subset)
from ...networks import Params, apply_critics
from ...registry import Algorithm, is_int, is_real, register, setting
from ...state import SACState, Static


def num_bins(config) -> int:
    """Each critic's outputs: its bins (``Algorithm.critic_outputs``)."""
    return config.algorithm_options.num_bins


def support(config, like: torch.Tensor) -> torch.Tensor:
    """The bins' values ``z [K]``, evenly spaced on ``[v_min, v_max]``, as ``like``'s dtype and
    device."""
    o = config.algorithm_options
    return torch.linspace(o.v_min, o.v_max, o.num_bins, dtype=like.dtype, device=like.device)


def apply_log_probs(static: Static, critic: Params, obs: torch.Tensor, action: torch.Tensor,
                    key=None) -> torch.Tensor:
    """The ensemble's log-probabilities of the bins, ``[N, B, K]``; ``ValueError`` if a critic
    does not output ``[B, num_bins]``."""
    return log_probs_of(static, apply_critics(static.critic, critic, obs, action, key))


def log_probs_of(static: Static, logits: torch.Tensor) -> torch.Tensor:
    """The log-softmax of the critics' outputs ``logits [N, B, K]``; ``ValueError`` unless each
    critic gave ``num_bins`` of them per row."""
    k = static.config.algorithm_options.num_bins
    if logits.dim() != 3 or logits.shape[2] != k:
        raise ValueError(f"the critics of algorithm {static.config.algorithm!r} must map "
                         f"[B, obs_dim + act_dim] to [B, num_bins={k}] logits, got "
                         f"[B, {', '.join(map(str, logits.shape[2:])) or 1}]")
    return torch.log_softmax(logits, dim=-1)


def expected_values(config, log_probs: torch.Tensor) -> torch.Tensor:
    """``sum_j p_j z_j`` of distributions ``log_probs [..., K]``: ``[...]``."""
    return (log_probs.exp() * support(config, log_probs)).sum(-1)


def project(probs: torch.Tensor, values: torch.Tensor, v_min: float, v_max: float) -> torch.Tensor:
    """The distribution putting ``probs [B, K]`` on ``values [B, K]`` (clipped to the support),
    each value's probability split between its two neighbours on the ``K`` bins in proportion
    to its nearness: ``[B, K]``, rows summing to their ``probs``' sums."""
    k = probs.shape[-1]
    b = (values.clamp(v_min, v_max) - v_min) * ((k - 1) / (v_max - v_min))  # in [0, K - 1]
    lower = b.floor().clamp(0, k - 1)
    upper_weight = b - lower  # 0 on a bin, so a value on bin i gives it all its probability
    out = torch.zeros_like(probs)
    out = out.scatter_add(-1, lower.long(), probs * (1.0 - upper_weight))
    return out.scatter_add(-1, (lower + 1).clamp(max=k - 1).long(), probs * upper_weight)


def categorical_target(state: SACState, batch: Batch, key: torch.Tensor) -> torch.Tensor:
    """The projected target distribution ``[B, K]`` (see the module's docstring)."""
    cfg, static = state.config, state.static
    k_action, k_value = keys.split(key, 2)
    k_subset, k_dropout = keys.split(k_value, 2)
    next_action, bonus = next_policy(state, batch, k_action)
    target = target_subset(cfg, state.target_critic, k_subset)
    return projected_target(state, batch, apply_log_probs(static, target, batch.next_obs,
                                                          next_action, k_dropout), bonus)


def projected_target(state: SACState, batch: Batch, log_probs: torch.Tensor,
                     bonus: torch.Tensor) -> torch.Tensor:
    """The target distribution ``[B, K]`` from the target critics' distributions ``log_probs
    [M, B, K]`` at ``(s', a')`` and the entropy bonus ``-alpha * log pi(a'|s') [B]``: per row the
    distribution of the lower expected value (``target_q_reduction="min"``) or their mean, its
    values moved to ``r + gamma^horizon * (1 - terminated) * (z_j + bonus)`` and projected."""
    cfg, each = state.config, log_probs.exp()
    z = support(cfg, each)
    if cfg.target_q_reduction == "min":  # per row, the critic of the lower expected value
        lowest = (each * z).sum(-1).argmin(0)[None, :, None]  # [1, B, 1]
        probs = each.gather(0, lowest.expand(-1, -1, each.shape[-1]))[0]
    else:
        probs = each.mean(0)
    values = bootstrap(state, batch, z + bonus[:, None])
    o = cfg.algorithm_options
    return project(probs, values, o.v_min, o.v_max)


def categorical_critic_loss(critic: Params, state: SACState, batch: Batch,
                            target: torch.Tensor,
                            key: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """``-mean_B weight * sum_j target_j log p_ij`` summed over the N critics, for the target
    distribution ``target [B, K]``; returns ``(loss, CriticOut(Q [N, B], target [B]))``, the
    critics' and the target's expected values."""
    cfg = state.config
    log_probs = apply_log_probs(state.static, critic, batch.obs, batch.action, key)
    loss = -(batch.weight * (target * log_probs).sum(-1)).mean(-1).sum(0)
    return loss, CriticOut(expected_values(cfg, log_probs), (target * support(cfg, target)).sum(-1))


def categorical_actor_loss(actor: Params, state: SACState, batch: Batch,
                           key: torch.Tensor) -> Tuple[torch.Tensor, ActorOut]:
    """``funcsac.losses.policy_loss`` with Q the critics' expected values, combined by
    ``actor_q_reduction``."""
    cfg, static = state.config, state.static
    return policy_loss(actor, state, batch.obs, key, lambda a, k: reduce_critics(
        expected_values(cfg, apply_log_probs(static, state.critic, batch.obs, a, k)),
        cfg.actor_q_reduction))


@dataclasses.dataclass(frozen=True)
class CategoricalOptions:
    """The categorical critic's options (``SACConfig.algorithm_options``); SimbaV2's values."""

    num_bins: int = setting(101, "bins of each critic's distribution of the return (K)")
    v_min: float = setting(-5.0, "the lowest bin's value (the support's lower end)")
    v_max: float = setting(5.0, "the highest bin's value")

    def check(self, config) -> None:
        """``ValueError`` unless ``num_bins >= 2`` and ``v_min < v_max``, both finite."""
        if not (is_int(self.num_bins) and self.num_bins >= 2):
            raise ValueError(f"SACConfig.num_bins must be an integer >= 2, got {self.num_bins!r}")
        if not (is_real(self.v_min) and is_real(self.v_max) and self.v_min < self.v_max):
            raise ValueError(f"SACConfig.v_min and v_max must be finite with v_min < v_max, got "
                             f"{self.v_min!r} and {self.v_max!r}")


CATEGORICAL_Q = register(Algorithm(
    "categorical_q", Losses(critic=categorical_critic_loss, actor=categorical_actor_loss,
                            target=categorical_target),
    help="categorical critics: num_bins logits over [v_min, v_max], the projected target, "
         "cross-entropy",
    critic_outputs=num_bins,
    options=CategoricalOptions))
