"""SAC's losses and critic target as pure functions of their parameters (the first argument of a
loss is differentiated), and ``Losses``, the set of them the steps take.

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


def next_policy(state: SACState, batch, key: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The policy at the next observations: ``a' ~ pi(.|s')`` drawn with ``key`` ``[B, A]`` and
    its entropy bonus ``-alpha * log pi(a'|s')`` ``[B]``."""
    next_action, next_log_prob = sample_action(state.actor, state.static, batch.next_obs, key)
    return next_action, -torch.exp(state.log_alpha) * next_log_prob


def soft_target(state: SACState, batch, key: torch.Tensor, next_value: Callable) -> torch.Tensor:
    """SAC's soft TD target ``r + gamma^horizon * (1 - terminated) * (V(s', a') - alpha *
    log pi(a'|s'))`` for ``a' ~ pi(.|s')``, where ``next_value(a' [B, A], k) -> [B]`` or
    ``[B, M]`` (M atoms of a distribution per row) is the target critics' value of the next
    pairs (``k``, split off ``key``, draws any subset or dropout masks); the result has its
    shape."""
    k_action, k_value = keys.split(key, 2)
    next_action, bonus = next_policy(state, batch, k_action)
    value = next_value(next_action, k_value)
    return bootstrap(state, batch, value + bonus.reshape(bonus.shape + (1,) * (value.dim() - 1)))


def td_target(state: SACState, batch, key: torch.Tensor) -> torch.Tensor:
    """SAC's ``soft_target`` ``[B]`` with ``V`` the min (or the mean, per
    ``config.target_q_reduction``) over a random subset of ``num_target_critics`` (REDQ's M) of
    the N target critics; only those M are evaluated."""
    cfg, static = state.config, state.static

    def next_value(next_action: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        k_subset, k_dropout = keys.split(k, 2)
        target = target_subset(cfg, state.target_critic, k_subset)
        q = apply_critics(static.critic, target, batch.next_obs, next_action, k_dropout)
        return reduce_critics(q, cfg.target_q_reduction)

    return soft_target(state, batch, key, next_value)


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


def critic_loss(critic: Params, state: SACState, batch, target: torch.Tensor,
                key: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """``0.5 * mean_B weight * (Q_i(s, a) - target)^2`` summed over the N critics (``key`` draws
    any dropout masks; ``weight [B]`` is ``batch.weight``, ones unless replay is prioritized);
    returns ``(loss, CriticOut(Q [N, B], target))``."""
    q = apply_critics(state.static.critic, critic, batch.obs, batch.action, key)
    return (0.5 * (batch.weight * (q - target).square()).mean(-1).sum(0),
            CriticOut(q, target))


def sample_action(actor: Params, static: Static, obs: torch.Tensor, key: torch.Tensor,
                  stats: Optional[Params] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``a ~ pi(.|obs)`` reparameterised with ``key``: ``(action [B, A], log_prob [B])``; with a
    ``stats`` dict the actor's batch normalisation layers run in training mode and put their new
    running statistics in it."""
    return tanh_gaussian_sample(*actor_gaussian(static, actor, obs, stats), key)


def policy_loss(actor: Params, state: SACState, obs: torch.Tensor, key: torch.Tensor,
                value: Callable) -> Tuple[torch.Tensor, ActorOut]:
    """``mean_B(alpha * log pi(a|s) - value(a, k))`` for ``a ~ pi(.|s)`` reparameterised with
    ``key``, the actor in training mode; ``value(a [B, A], k) -> [B]`` is the critics' estimate
    (``k``, split off ``key``, draws any critic dropout masks). Returns ``(loss,
    ActorOut(log_prob [B], the actor's new buffers))``."""
    k_sample, k_dropout = keys.split(key, 2)
    stats = {}
    a, log_prob = sample_action(actor, state.static, obs, k_sample, stats)
    alpha = torch.exp(state.log_alpha)
    return (alpha * log_prob - value(a, k_dropout)).mean(), ActorOut(log_prob, stats)


def actor_loss(actor: Params, state: SACState, batch, key: torch.Tensor
               ) -> Tuple[torch.Tensor, ActorOut]:
    """``policy_loss`` on ``batch.obs`` with Q the min (or mean, per
    ``config.actor_q_reduction``) over the state's N critics."""
    static = state.static
    return policy_loss(actor, state, batch.obs, key, lambda a, k: reduce_critics(
        apply_critics(static.critic, state.critic, batch.obs, a, k),
        state.config.actor_q_reduction))


def reduce_critics(q: torch.Tensor, how: str) -> torch.Tensor:
    """The critics' values ``q [N, ...]`` combined over the ensemble: their ``"min"`` or
    ``"mean"``, ``[...]``."""
    return q.min(0).values if how == "min" else q.mean(0)


def temperature_loss(log_alpha: torch.Tensor, entropy: torch.Tensor,
                     target_entropy: torch.Tensor) -> torch.Tensor:
    """``log_alpha * (entropy - target_entropy)``, ``entropy = -mean_B log pi``: its gradient
    raises alpha when the entropy is below target."""
    return log_alpha * (entropy - target_entropy)


def alpha_temperature_loss(log_alpha: torch.Tensor, entropy: torch.Tensor,
                           target_entropy: torch.Tensor) -> torch.Tensor:
    """``alpha * (entropy - target_entropy)``: the temperature loss of BRO and SimBa (its
    gradient in ``log_alpha`` is ``temperature_loss``'s times alpha)."""
    return torch.exp(log_alpha) * (entropy - target_entropy)


@dataclasses.dataclass(frozen=True)
class Losses:
    """The losses the steps take; replace one to change SAC without copying a step.

    Every variant's losses take the same arguments: the parameters differentiated first, then
    the state (the other networks, ``alpha``, the hyperparameters, the config) and the batch.

    - ``target(state, batch, key)``: what the critic loss regresses onto, any pytree of tensors
      (SAC's ``td_target [B]``, TQC's atoms ``[B, M]``, CrossQ's next actions and entropy bonus).
    - ``critic(critic, state, batch, target, key) -> (loss, CriticOut)``.
    - ``actor(actor, state, batch, key) -> (loss, ActorOut)``.
    - ``temperature(log_alpha, entropy, target_entropy) -> loss``, ``entropy`` the actor's
      ``-mean_B log pi`` (0-d).
    - ``combine(tree) -> tree``: what a step does with its gradients and the loss's new buffers
      (one pytree) before the optimiser takes them; None: nothing (data-parallel: their mean
      over the ranks, ``funcsac.parallel``).
    """

    critic: Callable[..., Tuple[torch.Tensor, CriticOut]] = critic_loss
    actor: Callable[..., Tuple[torch.Tensor, ActorOut]] = actor_loss
    temperature: Callable[..., torch.Tensor] = temperature_loss
    target: Callable[..., Any] = td_target
    combine: Optional[Callable[[Any], Any]] = None

    def replace(self, **changes) -> "Losses":
        """A copy with some losses replaced."""
        return dataclasses.replace(self, **changes)
