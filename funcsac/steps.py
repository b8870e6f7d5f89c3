"""SAC's three gradient steps as pure functions: the critics' (``critic_step``, with the targets'
polyak average), the actor's (``actor_step``) and the temperature's (``temperature_step``), each
returning a new state and its metrics (0-d tensors; the critic step's ``td_error`` ``[B]`` per
row). An update composes them (``funcsac.updates``). A batch reaches a step ``prepare``d, and
each step draws its randomness from the key it is given.

Gradients, Adam and the polyak average cover the trainable parameters only
(``Static.actor_trainable``, ``Static.critic_trainable``); buffers change only as a loss returns
their new values. An image encoder's tensors train with the critics' (their Adam moments hold
them as ``"encoder.<name>"``; a state of vector observations has none); ``image_critic_step`` and
``image_actor_step`` wrap the steps for image observations (DrQ).
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import torch
import torch.utils._pytree as pytree

from . import keys
from .batch import Batch, check_batch_structure
from .encoders import encoder_input
from .accel.grads import grad_and_value
from .losses import Losses
from .networks import Params, apply_encoder
from .normalize import normalize_obs, scale_reward
from .optim import adam_update, decayed_lr
from .registry import losses_for, variant_of
from .state import (SACState, check_state, critic_and_encoder, split_critic_and_encoder,
                    trainable)

Metrics = Dict[str, torch.Tensor]


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


def step_keys(state: SACState) -> torch.Tensor:
    """A gradient step's keys from ``state.key``: ``(the state's next key, the critic step's,
    the actor step's)``."""
    return keys.split(state.key, 3)


def polyak(target: Params, online: Params, names, tau: torch.Tensor) -> Params:
    """``target`` with its entries named in ``names`` (the trainable ones) moved towards
    ``online``'s, ``t + tau * (online - t)``; its other entries (buffers) kept."""
    return {k: t + tau * (online[k] - t) if k in names else t for k, t in target.items()}


def soft_update(target: Params, online: Params, tau: torch.Tensor) -> Params:
    """Polyak averaging ``target + tau * (online - target)`` for each name in ``target``."""
    return polyak(target, online, target, tau)


def gradient_step(loss_fn: Callable, params: Params, mask: Dict[str, bool], opt_state, lr, cfg,
                  *args, combine: Optional[Callable] = None):
    """Differentiate ``loss_fn(params, *args) -> (loss, out)`` with respect to the trainable
    entries of ``params`` (the names in ``mask``, which says where weight decay applies) and take
    an Adam step on them, at ``lr`` as the config's decay leaves it at this optimiser's step;
    the loss's new buffers (``out.buffers``) replace the old; ``combine`` (``Losses.combine``)
    takes the gradients and new buffers first. Returns ``(params, opt_state, grad_norm, (loss,
    out))``."""
    train = trainable(params, mask)
    grads, (loss, out) = grad_and_value(lambda p, *a: loss_fn({**params, **p}, *a))(train, *args)
    if not hasattr(out, "buffers"):
        raise TypeError(f"{getattr(loss_fn, '__qualname__', loss_fn)} returned (loss, "
                        f"{type(out).__name__}); a critic loss returns (loss, funcsac.CriticOut), "
                        "an actor loss (loss, funcsac.ActorOut)")
    if combine is not None:
        grads, buffers = combine((grads, out.buffers))
        out = out._replace(buffers=buffers)
    lr = decayed_lr(lr, opt_state.count, cfg.lr_decay_to, cfg.lr_decay_steps, cfg.lr_decay_shape)
    new, opt_state, norm = adam_update(grads, opt_state, train, lr, betas=cfg.adam_betas,
                                       eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
                                       decay_mask=mask, max_grad_norm=cfg.max_grad_norm)
    return {**params, **new, **out.buffers}, opt_state, norm, (loss, out)


def after_step(cfg, part: str, params: Params) -> Params:
    """``part``'s (``"actor"``, ``"critic"``) parameters after an optimiser step as its network
    keeps them (``Network.post_step``: SimbaV2's projection onto the sphere; a factory's network:
    as they are)."""
    post_step = variant_of(cfg, "network").post_step
    if post_step is None or getattr(cfg, f"{part}_factory") is not None:
        return params
    return post_step(params, cfg.network_options)


def _critics_on_features(critic_loss: Callable) -> Callable:
    """``critic_loss`` as a function of the critics' and the encoder's tensors
    (``critic_and_encoder``): with an encoder, its features (and any state vector) of the
    batch's prepared images are the observations the critics see."""
    def loss(params: Params, state: SACState, batch: Batch, *args):
        critic, encoder = split_critic_and_encoder(params)
        if encoder:
            batch = batch._replace(obs=apply_encoder(state.static.encoder, encoder, batch.obs))
        return critic_loss(critic, state, batch, *args)
    return loss


def critic_step(state: SACState, batch: Batch, key: torch.Tensor,
                losses: Optional[Losses] = None) -> Tuple[SACState, Metrics]:
    """One step of the critics (and of an image encoder) on ``losses.critic`` against
    ``losses.target``, then the targets' polyak average (every ``target_update_every`` steps of
    ``state.step``). Metrics: ``critic_loss``, ``q_mean``, ``target_q_mean``,
    ``critic_grad_norm`` and ``td_error [B]``, the mean over the critics of ``|Q_i(s, a) -
    target|`` before the step (prioritized replay's new priorities)."""
    cfg, static, hp = state.config, state.static, state.hparams
    losses = losses or losses_for(cfg)
    k_target, k_loss = keys.split(key, 2)
    target = losses.target(state, batch, k_target)
    trained, critic_opt, norm, (loss, out) = gradient_step(
        _critics_on_features(losses.critic), critic_and_encoder(state.critic, state.encoder),
        critic_and_encoder(static.critic_trainable, static.encoder_trainable), state.critic_opt,
        hp.critic_lr, cfg, state, batch, target, k_loss, combine=losses.combine)
    critic, encoder = split_critic_and_encoder(trained)
    critic = after_step(cfg, "critic", critic)
    tau = hp.tau if cfg.target_update_every == 1 else torch.where(  # 0: targets kept
        state.step % cfg.target_update_every == 0, hp.tau, 0.0)
    target_encoder = state.target_encoder and polyak(
        state.target_encoder, encoder, static.encoder_trainable,
        variant_of(cfg, "encoder").target_rate(tau, cfg.encoder_options))
    new = state.replace(critic=critic, critic_opt=critic_opt, encoder=encoder,
                        target_critic=polyak(state.target_critic, critic,
                                             static.critic_trainable, tau),
                        target_encoder=target_encoder)
    return new, {"critic_loss": loss, "q_mean": out.q.mean(), "target_q_mean": out.target.mean(),
                 "critic_grad_norm": norm, "td_error": (out.q.detach() - out.target).abs().mean(0)}


def actor_step(state: SACState, batch: Batch, key: torch.Tensor,
               losses: Optional[Losses] = None) -> Tuple[SACState, Metrics]:
    """One step of the actor on ``losses.actor`` against the state's critics and temperature.
    Metrics: ``actor_loss``, ``entropy`` (``-mean_B log pi``, which the temperature step takes)
    and ``actor_grad_norm``."""
    cfg, static = state.config, state.static
    losses = losses or losses_for(cfg)
    actor, actor_opt, norm, (loss, out) = gradient_step(
        losses.actor, state.actor, static.actor_trainable, state.actor_opt,
        state.hparams.actor_lr, cfg, state, batch, key, combine=losses.combine)
    new = state.replace(actor=after_step(cfg, "actor", actor), actor_opt=actor_opt)
    return new, {"actor_loss": loss, "entropy": -out.log_prob.detach().mean(),
                 "actor_grad_norm": norm}


def temperature_step(state: SACState, entropy: torch.Tensor,
                     losses: Optional[Losses] = None) -> Tuple[SACState, Metrics]:
    """One step of the temperature ``log_alpha`` on ``losses.temperature`` for the actor's
    ``entropy`` (0-d; unchanged unless ``config.learn_alpha``). Metrics: ``alpha_loss`` and
    ``alpha`` (before the step)."""
    cfg, hp = state.config, state.hparams
    losses = losses or losses_for(cfg)
    alpha = torch.exp(state.log_alpha)
    if not cfg.learn_alpha:  # the loss for the metrics; no gradient
        loss = losses.temperature(state.log_alpha, entropy.detach(), hp.target_entropy).detach()
        return state, {"alpha_loss": loss, "alpha": alpha}

    def loss_fn(log_alpha: torch.Tensor):
        loss = losses.temperature(log_alpha, entropy.detach(), hp.target_entropy)
        return loss, loss

    grad, (loss, _) = grad_and_value(loss_fn)(state.log_alpha)
    if losses.combine is not None:
        grad = losses.combine(grad)
    metrics = {"alpha_loss": loss, "alpha": alpha}
    lr = decayed_lr(hp.alpha_lr, state.alpha_opt.count, cfg.lr_decay_to, cfg.lr_decay_steps,
                    cfg.lr_decay_shape)
    new, alpha_opt, _ = adam_update({"log_alpha": grad}, state.alpha_opt,
                                    {"log_alpha": state.log_alpha}, lr,
                                    betas=cfg.temperature_betas, eps=cfg.adam_eps)
    return state.replace(log_alpha=new["log_alpha"], alpha_opt=alpha_opt), metrics


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


def image_critic_step(state: SACState, batch: Batch, key: torch.Tensor,
                      losses: Optional[Losses] = None) -> Tuple[SACState, Metrics]:
    """``critic_step`` on image observations (DrQ): each row taken in the encoder's
    ``view_count`` views, each with its own random shift; the critics see the encoder's features
    of the shifted images (the encoder trains with them), the target the target encoder's of
    the next ones, averaged over the views."""
    cfg, static = state.config, state.static
    losses = losses or losses_for(cfg)
    k_obs, k_next, k_step = keys.split(key, 3)
    views = variant_of(cfg, "encoder").view_count(cfg.encoder_options)
    batch = repeat_rows(batch, views)
    next_obs = apply_encoder(static.encoder, state.target_encoder,
                             encoder_input(cfg, batch.next_obs, k_next))
    batch = batch._replace(obs=encoder_input(cfg, batch.obs, k_obs), next_obs=next_obs.detach())
    target = losses.target
    losses = losses.replace(target=lambda *a: views_averaged(target(*a), views))
    new, metrics = critic_step(state, batch, k_step, losses)
    return new, {**metrics, "td_error": view_mean(metrics["td_error"], views)}


def actor_view(state: SACState, batch: Batch, key: torch.Tensor) -> Batch:
    """``batch`` as the actor sees image observations (DrQ): its ``obs`` the encoder's features
    of the images under a random shift drawn with ``key``, without gradient to the encoder."""
    obs = apply_encoder(state.static.encoder, state.encoder,
                        encoder_input(state.config, batch.obs, key))
    return batch._replace(obs=obs.detach())


def image_actor_step(state: SACState, batch: Batch, key: torch.Tensor,
                     losses: Optional[Losses] = None) -> Tuple[SACState, Metrics]:
    """``actor_step`` on image observations (DrQ), on the ``actor_view`` of the batch."""
    k_obs, k_step = keys.split(key, 2)
    return actor_step(state, actor_view(state, batch, k_obs), k_step, losses)


def steps_for(state: SACState) -> Tuple[Callable, Callable]:
    """The critic and actor steps for the state's observations: ``critic_step`` and
    ``actor_step``, or for images ``image_critic_step`` and ``image_actor_step``."""
    if state.static.encoder is None:
        return critic_step, actor_step
    return image_critic_step, image_actor_step
