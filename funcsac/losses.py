"""SAC's losses and critic target as pure functions of their parameters (the first argument of a
loss is differentiated), and ``Losses``, the set of them ``update`` is built from.

Shapes: ``B`` batch rows, ``N`` critics, ``A`` action dimensions.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional, Tuple

import torch
import torch.utils._pytree as pytree

from . import keys
from .networks import Params, apply_critics
from .policy import actor_gaussian, tanh_gaussian_sample
from .state import SACState, Static


class CriticOut(NamedTuple):
    """What a critic loss returns beside the loss: the critics' values ``q [N, B]`` at the batch's
    pairs, the regression target ``target [B]`` it used (a distributional target: the mean of
    its atoms) and ``buffers``, new values of the critics' buffers by name (a batch
    normalisation's running statistics; empty for most critics)."""

    q: torch.Tensor
    target: torch.Tensor
    buffers: Params = {}


class ActorOut(NamedTuple):
    """What an actor loss returns beside the loss: ``log_prob [B]``, the log-probabilities the
    temperature loss takes (a discrete policy: ``E_pi[log pi]``), and ``buffers``, new values of
    the actor's buffers by name."""

    log_prob: torch.Tensor
    buffers: Params = {}


def td_target(state: SACState, batch, key: torch.Tensor) -> torch.Tensor:
    """``r + gamma^horizon * (1 - terminated) * (min_M Q_target(s', a') - alpha * log pi(a'|s'))``
    [B] (``horizon`` is 1 for one-step transitions).

    The min (or the mean, per ``config.target_q_reduction``) runs over a random subset of
    ``num_target_critics`` (REDQ's M) of the N target critics; only those M are evaluated.
    """
    cfg, static = state.config, state.static
    k_action, k_subset, k_dropout = keys.split(key, 3)
    next_action, next_log_prob = sample_action(state.actor, static, batch.next_obs, k_action)
    target = target_subset(cfg, state.target_critic, k_subset)
    q = apply_critics(static.critic, target, batch.next_obs, next_action, k_dropout)
    q = reduce_critics(q, cfg.target_q_reduction)
    return bootstrap(state, batch, q - torch.exp(state.log_alpha) * next_log_prob)


def target_subset(cfg, critics, key: torch.Tensor):
    """A random ``num_target_critics`` of the N critics (REDQ's M) drawn with ``key``: the leading
    axis of each tensor of ``critics`` (stacked parameters, or values ``[N, ...]``) indexed by the
    same subset; all N (unchanged) when M = N."""
    if cfg.num_target_critics == cfg.num_critics:
        return critics
    subset = keys.choice(key, cfg.num_critics, cfg.num_target_critics)
    return pytree.tree_map(lambda x: x[subset], critics)


def bootstrap(state: SACState, batch, next_value: torch.Tensor) -> torch.Tensor:
    """``r + gamma^horizon * (1 - terminated) * next_value`` for a soft value ``next_value [B]``
    or ``[B, M]`` (M atoms of a distribution per row); the result has its shape."""
    per_row = lambda x: x.reshape(x.shape + (1,) * (next_value.dim() - 1))  # noqa: E731
    not_done = 1.0 - batch.terminated.to(next_value.dtype)
    return (per_row(batch.reward)
            + per_row(state.hparams.gamma ** batch.horizon * not_done) * next_value)


def critic_loss(critic: Params, static: Static, obs: torch.Tensor, action: torch.Tensor,
                target_q: torch.Tensor, key: torch.Tensor,
                weight: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """``0.5 * mean_B weight * (Q_i - target)^2`` summed over the N critics (``key`` draws any
    dropout masks; ``weight [B]`` is ``Batch.weight``, ones unless replay is prioritized);
    returns ``(loss, CriticOut(Q [N, B], target_q))``."""
    q = apply_critics(static.critic, critic, obs, action, key)
    return 0.5 * (weight * (q - target_q).square()).mean(-1).sum(0), CriticOut(q, target_q)


def sample_action(actor: Params, static: Static, obs: torch.Tensor, key: torch.Tensor,
                  stats: Optional[Params] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``a ~ pi(.|obs)`` reparameterised with ``key``: ``(action [B, A], log_prob [B])``; with a
    ``stats`` dict the actor's batch normalisation layers run in training mode and put their new
    running statistics in it."""
    return tanh_gaussian_sample(*actor_gaussian(static, actor, obs, stats), key)


def policy_loss(actor: Params, static: Static, obs: torch.Tensor, alpha: torch.Tensor,
                key: torch.Tensor, value: Callable) -> Tuple[torch.Tensor, ActorOut]:
    """``mean_B(alpha * log pi(a|s) - value(a, k))`` for ``a ~ pi(.|s)`` reparameterised with
    ``key``, the actor in training mode; ``value(a [B, A], k) -> [B]`` is the critics' estimate
    (``k``, split off ``key``, draws any critic dropout masks). Returns ``(loss,
    ActorOut(log_prob [B], the actor's new buffers))``."""
    k_sample, k_dropout = keys.split(key, 2)
    stats = {}
    a, log_prob = sample_action(actor, static, obs, k_sample, stats)
    return (alpha * log_prob - value(a, k_dropout)).mean(), ActorOut(log_prob, stats)


def actor_loss(actor: Params, critic: Params, static: Static, obs: torch.Tensor,
               alpha: torch.Tensor, key: torch.Tensor) -> Tuple[torch.Tensor, ActorOut]:
    """``policy_loss`` with Q the min (or mean, per ``config.actor_q_reduction``) over the N
    critics."""
    return policy_loss(actor, static, obs, alpha, key, lambda a, k: reduce_critics(
        apply_critics(static.critic, critic, obs, a, k), static.config.actor_q_reduction))


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


def alpha_temperature_loss(log_alpha: torch.Tensor, log_prob: torch.Tensor,
                           target_entropy: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """``alpha * (entropy - target_entropy)``, entropy ``-mean_B log pi``: the temperature loss of
    BRO and SimBa (its gradient in ``log_alpha`` is ``temperature_loss``'s times alpha). Returns
    ``(loss, loss)``."""
    loss = torch.exp(log_alpha) * (-log_prob.mean() - target_entropy)
    return loss, loss


@dataclasses.dataclass(frozen=True)
class Losses:
    """The pieces ``update`` is built from; replace one to change SAC without copying ``update``.

    ``target(state, batch, key)`` computes what the critic loss regresses onto (SAC's
    ``td_target [B]``; any pytree of tensors the critic loss takes as its ``target_q``: TQC's
    atoms ``[B, M]``, CrossQ's pieces of a target its critic loss finishes). The critic loss
    returns ``(loss, CriticOut)``, the actor loss ``(loss, ActorOut)`` and the temperature loss
    ``(loss, loss)``, with the signatures of their defaults here. ``extra(state, batch, key) ->
    (extra, metrics)``, for an algorithm with state of its own (``SACState.extra``), is its step,
    taken after the actor's and the temperature's on the same batch: the new ``extra`` and a dict
    of 0-d metrics (``None``: no such step).
    """

    critic: Callable[..., Tuple[torch.Tensor, CriticOut]] = critic_loss
    actor: Callable[..., Tuple[torch.Tensor, ActorOut]] = actor_loss
    temperature: Callable[..., Any] = temperature_loss
    target: Callable[..., Any] = td_target
    extra: Optional[Callable[..., Tuple[Any, dict]]] = None
