"""One SAC gradient step as a pure function: ``update(state, batch) -> (state, metrics)``.

Order (as in jaxrl): critic step, polyak target update, actor step against the new critics,
temperature step on the actor's log-probs; an algorithm with ``actor_first`` (SimBa's) takes the
actor's and the temperature's steps first and the critics' against them (against the old ones
where the actor is not due). The actor and the temperature change only every ``policy_delay``
steps, chosen with tensor arithmetic so that one compiled graph serves every step; a caller that
knows the step (the driver) calls ``update.critic_update`` where the actor is not due, and
computes nothing in vain.
All randomness comes from ``state.key``. Gradients, Adam and the polyak average cover the trainable
parameters only (``Static.actor_trainable``, ``Static.critic_trainable``); buffers change only as
a loss returns their new values. ``critic_step`` and ``actor_step`` are the two halves, which
``update_many`` runs in rlpd's order (several critic steps, then one actor step). With image
observations the critic step trains the shared encoder with the critics (their Adam moments hold
its tensors as ``"encoder.<name>"``), the targets read the target encoder's features, and the
actor step the encoder's, detached; each draws its own random shifts.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Optional

import torch
import torch.utils._pytree as pytree

from . import keys
from .batch import Batch, check_batch_structure
from .encoders import encoder_input
from .grads import grad_and_value
from .losses import Losses
from .networks import Params, apply_encoder
from .normalize import normalize_obs, scale_reward
from .optim import adam_update, decayed_lr
from .registry import algorithm_of, losses_for, variant_of
from .state import (SACState, check_state, critic_and_encoder, split_critic_and_encoder,
                    trainable)

Metrics = Dict[str, torch.Tensor]

METRIC_NAMES = ("critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_mean",
                "target_q_mean", "critic_grad_norm", "actor_grad_norm")


def soft_update(target: Params, online: Params, tau: torch.Tensor) -> Params:
    """Polyak averaging ``target + tau * (online - target)`` for each name in ``target``."""
    return {k: t + tau * (online[k] - t) for k, t in target.items()}


def _polyak(target: Params, online: Params, names, tau: torch.Tensor) -> Params:
    """``target`` with its trainable entries (``names``) moved towards ``online``'s
    (``soft_update``); its other entries (buffers) kept."""
    return {**target, **soft_update(trainable(target, names), online, tau)}


def _train(loss_fn: Callable, params: Params, mask: Dict[str, bool], opt_state, lr, cfg,
           *args):
    """Differentiate ``loss_fn(params, *args)`` with respect to the trainable entries of ``params``
    (the names in ``mask``, which says where weight decay applies) and take an Adam step on them
    (at ``lr`` as the config's decay leaves it at this optimiser's step);
    the loss's new buffers (``out.buffers``) replace the old. Returns ``(params, opt_state,
    grad_norm, (loss, out))``."""
    train = trainable(params, mask)
    grads, (loss, out) = grad_and_value(lambda p, *a: loss_fn({**params, **p}, *a))(train, *args)
    if not hasattr(out, "buffers"):
        raise TypeError(f"{getattr(loss_fn, '__qualname__', loss_fn)} returned (loss, "
                        f"{type(out).__name__}); a critic loss returns (loss, funcsac.CriticOut), "
                        "an actor loss (loss, funcsac.ActorOut)")
    lr = decayed_lr(lr, opt_state.count, cfg.lr_decay_to, cfg.lr_decay_steps, cfg.lr_decay_shape)
    new, opt_state, norm = adam_update(grads, opt_state, train, lr, betas=cfg.adam_betas,
                                       eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
                                       decay_mask=mask, max_grad_norm=cfg.max_grad_norm)
    return {**params, **new, **out.buffers}, opt_state, norm, (loss, out)


def _kept(cfg, part: str, params: Params) -> Params:
    """``part``'s (``"actor"``, ``"critic"``) parameters after an optimiser step as its network
    keeps them (``Network.post_step``; a factory's network: as they are)."""
    post_step = variant_of(cfg, "network").post_step
    if post_step is None or getattr(cfg, f"{part}_factory") is not None:
        return params
    return post_step(params, cfg.network_options)


def repeat_rows(batch: Batch, n: int) -> Batch:
    """``batch`` stacked ``n`` times along its rows, ``[n * B, ...]`` (itself when ``n`` is 1)."""
    if n == 1:
        return batch
    return Batch(*pytree.tree_map(lambda x: x.repeat((n,) + (1,) * (x.dim() - 1)),
                                  tuple(batch)))


def view_mean(x: torch.Tensor, n: int) -> torch.Tensor:
    """The mean over ``n`` stacked copies of ``x [n * B, ...]``: ``[B, ...]`` (``x`` itself when
    ``n`` is 1)."""
    return x if n == 1 else x.reshape((n, -1) + tuple(x.shape[1:])).mean(0)


def views_averaged(tree, n: int):
    """Each tensor ``x [n * B, ...]`` of ``tree`` replaced by its mean over the ``n`` stacked
    copies, repeated back to ``[n * B, ...]`` (``tree`` itself when ``n`` is 1)."""
    if n == 1:
        return tree
    return pytree.tree_map(lambda x: view_mean(x, n).repeat((n,) + (1,) * (x.dim() - 1)), tree)


def _through_encoder(critic_loss: Callable) -> Callable:
    """``critic_loss`` as a function of the critics' and the encoder's tensors
    (``critic_and_encoder``) and of image observations (prepared, or dicts of them and a state
    vector): the encoder's features (and the state) go in as observations."""
    def loss(params: Params, static, obs, *args):
        critic, encoder = split_critic_and_encoder(params)
        return critic_loss(critic, static, apply_encoder(static.encoder, encoder, obs), *args)
    return loss


def prepare(state: SACState, batch: Batch) -> Batch:
    """``batch`` checked against the state's config and normalised by its running statistics
    (observations and rewards, when the config keeps them)."""
    check_state(state)
    check_batch_structure(batch, state.config)
    if not state.norm:
        return batch
    return batch._replace(obs=normalize_obs(state.norm, batch.obs),
                          next_obs=normalize_obs(state.norm, batch.next_obs),
                          reward=scale_reward(state.norm, batch.reward,
                                                     state.config.return_bound))


def _step_keys(state: SACState) -> tuple:
    """A gradient step's keys from ``state.key``: ``(the state's next key, the target's, the
    critic loss's, the actor's)``, and with an encoder ``(..., the observations' shifts, the next
    observations')``."""
    return keys.split(state.key, 4 if state.static.encoder is None else 6)


def _actor_key(state: SACState) -> torch.Tensor:
    """The key the actor step of the gradient step from ``state`` draws from (the one
    ``critic_step`` returns)."""
    return _step_keys(state)[3]


def make_update(loss_fns: Optional[Losses] = None, with_aux: bool = False) -> Callable:
    """An ``update(state, batch) -> (state, metrics)`` function built from the given losses (by
    default those of the state's ``config.algorithm`` and ``config.policy``, ``losses_for``); with
    ``with_aux``, ``update(state, batch) -> (state, metrics, aux)`` where ``aux`` holds per-sample
    outputs: ``td_error [B]``, the mean over the critics of ``|Q_i(s, a) - target|`` before the
    step (prioritized replay's new priorities). The returned function carries its halves as
    ``update.critic_step`` and ``update.actor_step`` (and ``update.with_aux``)."""

    def critic_step(state: SACState, batch: Batch):
        """One critic step on ``batch`` (already ``prepare``d) and the targets' polyak average.
        Returns the new state (its key moved on, ``step + 1``), the key the actor step of this
        gradient step draws from, the critic's metrics and ``td_error [B]``."""
        cfg, static, hp = state.config, state.static, state.hparams
        fns = loss_fns if loss_fns is not None else losses_for(cfg)
        if static.encoder is None:
            key, k_target, k_critic, k_actor = _step_keys(state)
            loss_fn, params, mask = fns.critic, state.critic, static.critic_trainable
            obs, views = batch.obs, 1
        else:  # the encoder trains with the critics, the targets read its target copy
            key, k_target, k_critic, k_actor, k_obs, k_next = _step_keys(state)
            views = variant_of(cfg, "encoder").view_count(cfg.encoder_options)
            batch = repeat_rows(batch, views)  # each copy draws its own shifts (DrQ's K = M)
            next_obs = apply_encoder(static.encoder, state.target_encoder,
                                     encoder_input(cfg, batch.next_obs, k_next))
            batch = batch._replace(next_obs=next_obs.detach())
            loss_fn = _through_encoder(fns.critic)
            params = critic_and_encoder(state.critic, state.encoder)
            mask = critic_and_encoder(static.critic_trainable, static.encoder_trainable)
            obs = encoder_input(cfg, batch.obs, k_obs)
        target_q = views_averaged(fns.target(state, batch, k_target), views)
        trained, critic_opt, c_norm, (c_loss, out) = _train(
            loss_fn, params, mask, state.critic_opt, hp.critic_lr, cfg, static, obs,
            batch.action, target_q, k_critic, batch.weight)
        critic, encoder = ((trained, {}) if static.encoder is None
                           else split_critic_and_encoder(trained))
        critic = _kept(cfg, "critic", critic)
        target_critic, target_encoder = state.target_critic, state.target_encoder
        tau = hp.tau if cfg.target_update_every == 1 else torch.where(  # 0: targets kept
            state.step % cfg.target_update_every == 0, hp.tau, 0.0)
        if algorithm_of(cfg).target_networks:
            target_critic = _polyak(target_critic, critic, static.critic_trainable, tau)
        if static.encoder is not None:
            target_encoder = _polyak(target_encoder, encoder, static.encoder_trainable,
                                     variant_of(cfg, "encoder").target_rate(
                                         tau, cfg.encoder_options))
        metrics = {"critic_loss": c_loss, "q_mean": out.q.mean(),
                   "target_q_mean": out.target.mean(), "critic_grad_norm": c_norm}
        td_error = view_mean((out.q.detach() - out.target).abs().mean(0), views)
        new = dataclasses.replace(state, critic=critic, target_critic=target_critic,
                                  critic_opt=critic_opt, key=key, step=state.step + 1,
                                  encoder=encoder, target_encoder=target_encoder)
        return new, k_actor, metrics, td_error

    def actor_step(state: SACState, batch: Batch, key: torch.Tensor):
        """One actor step on ``batch`` (already ``prepare``d) against the state's critics, drawing
        from ``key``, one temperature step on its log-probabilities, and the algorithm's own
        step (``Losses.extra``) if it has one. Returns the new state and the actor's metrics
        (``alpha`` before the step)."""
        cfg, static, hp = state.config, state.static, state.hparams
        fns = loss_fns if loss_fns is not None else losses_for(cfg)
        if fns.extra is not None:
            key, k_extra = keys.split(key, 2)
        if static.encoder is not None:  # the critics' encoder, detached (DrQ)
            k_obs, key = keys.split(key, 2)
            obs = apply_encoder(static.encoder, state.encoder, encoder_input(cfg, batch.obs, k_obs))
            batch = batch._replace(obs=obs.detach())
        alpha, actor_obs = torch.exp(state.log_alpha), algorithm_of(cfg).actor_obs
        actor, actor_opt, a_norm, (a_loss, out) = _train(
            fns.actor, state.actor, static.actor_trainable, state.actor_opt, hp.actor_lr,
            cfg, state.critic, static, batch.obs if actor_obs is None else actor_obs(batch),
            alpha, key)
        actor = _kept(cfg, "actor", actor)
        log_prob = out.log_prob.detach()
        t_grad, (t_loss, _) = grad_and_value(fns.temperature)(state.log_alpha, log_prob,
                                                              hp.target_entropy)
        log_alpha, alpha_opt = state.log_alpha, state.alpha_opt
        if cfg.learn_alpha:
            new_la, alpha_opt, _ = adam_update({"log_alpha": t_grad}, alpha_opt,
                                               {"log_alpha": log_alpha},
                                               decayed_lr(hp.alpha_lr, alpha_opt.count,
                                                          cfg.lr_decay_to, cfg.lr_decay_steps,
                                                          cfg.lr_decay_shape),
                                               betas=cfg.temperature_betas, eps=cfg.adam_eps)
            log_alpha = new_la["log_alpha"]
        metrics = {"actor_loss": a_loss, "alpha_loss": t_loss, "alpha": alpha,
                   "entropy": -log_prob.mean(), "actor_grad_norm": a_norm}
        new = dataclasses.replace(state, actor=actor, actor_opt=actor_opt, log_alpha=log_alpha,
                                  alpha_opt=alpha_opt)
        if fns.extra is not None:  # the algorithm's own step (BRO's optimistic actor)
            extra, extra_metrics = fns.extra(new, batch, k_extra)
            new, metrics = dataclasses.replace(new, extra=extra), {**metrics, **extra_metrics}
        return new, metrics

    def update(state: SACState, batch: Batch):
        """One SAC step on ``batch``; returns the new state, a dict of 0-d tensor metrics and,
        with ``with_aux``, a dict of per-sample tensors."""
        batch = prepare(state, batch)
        if algorithm_of(state.config).actor_first:  # the critics learn against the new actor
            acted, a_metrics = actor_step(state, batch, _actor_key(state))
            new, _, c_metrics, td_error = critic_step(when_due(state, acted, state), batch)
            return finish(new, {**c_metrics, **a_metrics}, td_error)
        critic_done, k_actor, c_metrics, td_error = critic_step(state, batch)
        new, a_metrics = actor_step(critic_done, batch, k_actor)
        return finish(when_due(state, new, critic_done), {**c_metrics, **a_metrics}, td_error)

    def when_due(state: SACState, stepped: SACState, kept: SACState) -> SACState:
        """``stepped``, whose actor, temperature and the algorithm's own state are ``kept``'s
        where the actor is not due at ``state.step`` (every ``policy_delay`` steps), chosen with
        tensor arithmetic."""
        if state.config.policy_delay == 1:
            return stepped
        due = state.step % state.config.policy_delay == 0
        # the names as literals: a stored compiled function cannot look up module globals
        return dataclasses.replace(stepped, **{f: pytree.tree_map(
            lambda n, o: torch.where(due, n, o), getattr(stepped, f), getattr(kept, f))
            for f in ("actor", "actor_opt", "log_alpha", "alpha_opt", "extra")})

    def finish(new: SACState, metrics: Metrics, td_error: torch.Tensor):
        """What ``update`` returns: the new state, the metrics (``METRIC_NAMES``, in another
        order) and, with ``with_aux``, the per-sample outputs."""
        return (new, metrics, {"td_error": td_error}) if with_aux else (new, metrics)

    def critic_update(state: SACState, batch: Batch):
        """``update`` on a step whose actor is not due (``state.step % policy_delay != 0``): the
        critic half alone, which gives the same new state; the critic's metrics only."""
        new, _, metrics, td_error = critic_step(state, prepare(state, batch))
        return finish(new, metrics, td_error)

    update.critic_step, update.actor_step, update.with_aux = critic_step, actor_step, with_aux
    update.critic_update = critic_update
    return update


update = make_update()
update_with_aux = make_update(with_aux=True)
