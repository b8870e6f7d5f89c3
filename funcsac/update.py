"""One SAC gradient step as a pure function: ``update(state, batch) -> (state, metrics)``.

Order (as in jaxrl): critic step, polyak target update, actor step against the new critics,
temperature step on the actor's log-probs. The actor and the temperature change only every
``policy_delay`` steps, chosen with tensor arithmetic so that one compiled graph serves every step.
All randomness comes from ``state.key``. Gradients, Adam and the polyak average cover the trainable
parameters only (``Static.actor_trainable``, ``Static.critic_trainable``); buffers stay unchanged.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Optional

import torch
import torch.utils._pytree as pytree

from . import keys, losses
from .batch import Batch, check_batch_structure
from .networks import Params, apply_critics
from .normalize import normalize_obs, scale_reward
from .optim import adam_update
from .state import SACState, check_state, trainable

Metrics = Dict[str, torch.Tensor]

METRIC_NAMES = ("critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_mean",
                "target_q_mean", "critic_grad_norm", "actor_grad_norm")


def soft_update(target: Params, online: Params, tau: torch.Tensor) -> Params:
    """Polyak averaging ``target + tau * (online - target)`` for each name in ``target``."""
    return {k: t + tau * (online[k] - t) for k, t in target.items()}


def td_target(state: SACState, batch: Batch, key: torch.Tensor) -> torch.Tensor:
    """``r + gamma^horizon * (1 - terminated) * (min_M Q_target(s', a') - alpha * log pi(a'|s'))``
    [B] (``horizon`` is 1 for one-step transitions).

    The min runs over a random subset of ``num_target_critics`` (REDQ's M) of the N target critics;
    only those M are evaluated.
    """
    cfg, static = state.config, state.static
    k_action, k_subset, k_dropout = keys.split(key, 3)
    next_action, next_log_prob = losses.sample_action(state.actor, static, batch.next_obs,
                                                      k_action)
    target = target_subset(cfg, state.target_critic, k_subset)
    q = apply_critics(static.critic, target, batch.next_obs, next_action, k_dropout)
    return bootstrap(state, batch, q.min(0).values - torch.exp(state.log_alpha) * next_log_prob)


def target_subset(cfg, critics, key: torch.Tensor):
    """A random ``num_target_critics`` of the N critics (REDQ's M) drawn with ``key``: the leading
    axis of each tensor of ``critics`` (stacked parameters, or values ``[N, ...]``) indexed by the
    same subset; all N (unchanged) when M = N."""
    if cfg.num_target_critics == cfg.num_critics:
        return critics
    subset = keys.choice(key, cfg.num_critics, cfg.num_target_critics)
    return pytree.tree_map(lambda x: x[subset], critics)


def bootstrap(state: SACState, batch: Batch, next_value: torch.Tensor) -> torch.Tensor:
    """``r + gamma^horizon * (1 - terminated) * next_value`` for a soft value ``next_value [B]``
    or ``[B, M]`` (M atoms of a distribution per row); the result has its shape."""
    per_row = lambda x: x.reshape(x.shape + (1,) * (next_value.dim() - 1))  # noqa: E731
    not_done = 1.0 - batch.terminated.to(next_value.dtype)
    return (per_row(batch.reward)
            + per_row(state.hparams.gamma ** batch.horizon * not_done) * next_value)


def _train(loss_fn: Callable, params: Params, mask: Dict[str, bool], opt_state, lr, cfg,
           *args):
    """Differentiate ``loss_fn(params, *args)`` with respect to the trainable entries of ``params``
    (the names in ``mask``, which says where weight decay applies) and take an Adam step on them;
    buffers pass through unchanged. Returns ``(params, opt_state, grad_norm, (loss, aux))``."""
    train = trainable(params, mask)
    grads, out = torch.func.grad_and_value(
        lambda p, *a: loss_fn({**params, **p}, *a), has_aux=True)(train, *args)
    new, opt_state, norm = adam_update(grads, opt_state, train, lr, betas=cfg.adam_betas,
                                       eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
                                       decay_mask=mask, max_grad_norm=cfg.max_grad_norm)
    return {**params, **new}, opt_state, norm, out


@dataclasses.dataclass(frozen=True)
class Losses:
    """The pieces ``update`` is built from; replace one to change SAC without copying ``update``.

    ``target(state, batch, key) -> [B]`` computes the critics' regression target (default
    ``td_target``; a distributional variant's is ``[B, M]``, M atoms per row, as TQC's); the
    losses have the signatures of their defaults in ``funcsac.losses`` and return
    ``(loss, aux)``; the critic loss's aux is the critics' values ``Q [N, B]``, or a dict
    ``{"q": Q [N, B], "target": [B], "buffers": {name: new value}}`` for a critic loss that
    computes the target itself from what ``target`` passed it, or updates the critics' buffers
    (CrossQ's joint forward and running statistics).
    """

    critic: Callable = losses.critic_loss
    actor: Callable = losses.actor_loss
    temperature: Callable = losses.temperature_loss
    target: Callable = td_target


# each ``SACConfig.algorithm`` and the losses it trains the tanh-Gaussian policy with; the
# modules of other algorithms and policy families (imported by ``funcsac/__init__.py``) add theirs
ALGORITHMS: Dict[str, Losses] = {"sac": Losses()}
ALGORITHMS_BY_POLICY: Dict[str, Dict[str, Losses]] = {"tanh_gaussian": ALGORITHMS}


def losses_for(config) -> Losses:
    """The losses of ``config.algorithm`` for ``config.policy``."""
    return ALGORITHMS_BY_POLICY[config.policy][config.algorithm]


def make_update(loss_fns: Optional[Losses] = None, with_aux: bool = False) -> Callable:
    """An ``update(state, batch) -> (state, metrics)`` function built from the given losses (by
    default those of the state's ``config.algorithm`` and ``config.policy``, ``losses_for``); with
    ``with_aux``, ``update(state, batch) -> (state, metrics, aux)`` where ``aux`` holds per-sample
    outputs: ``td_error [B]``, the mean over the critics of ``|Q_i(s, a) - target|`` before the
    step (prioritized replay's new priorities; a target of atoms ``[B, M]`` counts as their
    mean)."""

    def update(state: SACState, batch: Batch):
        """One SAC step on ``batch``; returns the new state, a dict of 0-d tensor metrics and,
        with ``with_aux``, a dict of per-sample tensors."""
        cfg, static, hp = state.config, state.static, state.hparams
        fns = loss_fns if loss_fns is not None else losses_for(cfg)
        check_state(state)
        check_batch_structure(batch, cfg)
        if state.norm:
            batch = batch._replace(obs=normalize_obs(state.norm, batch.obs),
                                   next_obs=normalize_obs(state.norm, batch.next_obs),
                                   reward=scale_reward(state.norm, batch.reward))
        key, k_target, k_critic, k_actor = keys.split(state.key, 4)
        alpha = torch.exp(state.log_alpha)

        target_q = fns.target(state, batch, k_target)
        critic, critic_opt, c_norm, (c_loss, q) = _train(
            fns.critic, state.critic, static.critic_trainable, state.critic_opt,
            hp.critic_lr, cfg, static, batch.obs, batch.action, target_q, k_critic, batch.weight)
        if isinstance(q, dict):  # a critic loss that computes the target or updates buffers
            q, target_q, critic = q["q"], q["target"], {**critic, **q.get("buffers", {})}
        names = static.critic_trainable
        target_critic = {**state.target_critic,
                         **soft_update(trainable(state.target_critic, names), critic, hp.tau)}

        actor, actor_opt, a_norm, (a_loss, log_prob) = _train(
            fns.actor, state.actor, static.actor_trainable, state.actor_opt, hp.actor_lr,
            cfg, critic, static, batch.obs, alpha, k_actor)

        t_grad, (t_loss, _) = torch.func.grad_and_value(fns.temperature, has_aux=True)(
            state.log_alpha, log_prob.detach(), hp.target_entropy)
        log_alpha, alpha_opt = state.log_alpha, state.alpha_opt
        if cfg.learn_alpha:
            new_la, alpha_opt, _ = adam_update({"log_alpha": t_grad}, alpha_opt,
                                               {"log_alpha": log_alpha}, hp.alpha_lr,
                                               betas=cfg.adam_betas, eps=cfg.adam_eps)
            log_alpha = new_la["log_alpha"]

        delayed = (actor, actor_opt, log_alpha, alpha_opt)
        if cfg.policy_delay > 1:
            due = state.step % cfg.policy_delay == 0
            old = (state.actor, state.actor_opt, state.log_alpha, state.alpha_opt)
            delayed = pytree.tree_map(lambda n, o: torch.where(due, n, o), delayed, old)
        actor, actor_opt, log_alpha, alpha_opt = delayed

        new_state = dataclasses.replace(
            state, actor=actor, critic=critic, target_critic=target_critic, actor_opt=actor_opt,
            critic_opt=critic_opt, alpha_opt=alpha_opt, log_alpha=log_alpha, key=key,
            step=state.step + 1)
        metrics = {"critic_loss": c_loss, "actor_loss": a_loss, "alpha_loss": t_loss,
                   "alpha": alpha, "entropy": -log_prob.mean(), "q_mean": q.mean(),
                   "target_q_mean": target_q.mean(), "critic_grad_norm": c_norm,
                   "actor_grad_norm": a_norm}
        if with_aux:
            point = target_q.mean(-1) if target_q.dim() == 2 else target_q
            return new_state, metrics, {"td_error": (q.detach() - point).abs().mean(0)}
        return new_state, metrics

    return update


update = make_update()
update_with_aux = make_update(with_aux=True)
