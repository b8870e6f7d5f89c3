"""BRO, Bigger, Regularized, Optimistic (Nauman et al. 2024; naumix/BiggerRegularizedOptimistic
``jaxrl/bro``): ``SACConfig(algorithm="bro")``; the ``bro`` preset adds its networks and settings.

Distributional critics: each of the N critics outputs K = ``num_quantiles`` quantiles of the
return, ``Z [N, B, K]``, at the fractions ``(k + 0.5) / K``. The critics are combined quantile by
quantile (``combine``): their mean minus ``pessimism`` times their mean absolute deviation
(N = 2: ``|Z_1 - Z_2| / 2``, as in ``critic.py``). The TD target takes that combination at
``(s', a')``, each quantile an atom; the critic loss is BRO's quantile Huber loss (summed over the
quantiles, averaged over rows and atoms), summed over the critics; the actor maximises the
combination's mean over the quantiles; the temperature loss is ``alpha * (entropy - target)``
(``temperature.py``: its gradient on log alpha is alpha times SAC's).

Optimistic exploration (``actor.py``'s ``update_optimistic``): a second actor, a network of the
actor's shape over ``[obs, mu]`` whose bias-free head (orthogonal, gain 0.01) shifts the actor's
mean ``mu``, collects the experience (``act`` with ``deterministic=False``) with the Gaussian
``N(mu + shift, std_multiplier * std)`` squashed by tanh. It maximises the upper bound ``mean +
optimism * deviation`` of the critics (averaged over the quantiles) less ``kl_weight`` times the
KL divergence from its Gaussian (its std divided by ``std_multiplier``) to the actor's; the
optimism and the KL weight are adjusted (Adam at ``adjustment_lr``, beta1 0.5) so that the KL per
action dimension stays at ``kl_target``, each ``exp`` of a tanh-squashed parameter in
``[-10, 7.5]``. Evaluation acts with the actor's mean. All of it lives in ``SACState.extra``:
``"actor"`` and ``"actor_opt"`` (AdamW as the actor's), ``"adjustments"`` (the optimism's and
the KL weight's parameters) and ``"adjustments_opt"``.

Shapes: ``B`` batch rows, ``N`` critics, ``K`` quantiles, ``A`` action dimensions.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Dict, Optional, Tuple

import torch
from torch import nn

from ... import keys
from ...architectures import build_network
from ...batch import Batch
from ...accel.grads import grad_and_value
from ...losses import ActorOut, CriticOut, Losses, alpha_temperature_loss, policy_loss, soft_target
from ...networks import Params, apply_network, decay_mask, module_params
from ...policy import actor_gaussian, actor_obs
from ...optim import adam_init, adam_update
from ...registry import Algorithm, is_real, register, setting
from ...state import SACState, Static, trainable
from ...steps import actor_view
from ...updates import sac_update, when_due
from ..tqc.algorithm import (apply_quantile_critics, check_num_quantiles, quantile_critic_loss,
                  quantile_outputs)

LOG_RANGE = (-10.0, 7.5)  # the adjustments' log-values lie here (temperature.py's Adjustment)


def adjustment(param: torch.Tensor) -> torch.Tensor:
    """An adjustment's value (the optimism, the KL weight) from its parameter:
    ``exp(lo + (hi - lo) * (1 + tanh(param)) / 2)`` for ``(lo, hi) = LOG_RANGE``."""
    lo, hi = LOG_RANGE
    return torch.exp(lo + (hi - lo) * 0.5 * (1.0 + torch.tanh(param)))


def adjustment_param(value: float) -> float:
    """The parameter whose ``adjustment`` is ``value`` (``bro_learner.py``'s
    ``calculate_init_values``)."""
    lo, hi = LOG_RANGE
    return math.atanh((math.log(value) - lo) / ((hi - lo) * 0.5) - 1.0)


def combine(z: torch.Tensor, pessimism) -> torch.Tensor:
    """The critics' quantiles ``z [N, B, K]`` combined over the ensemble, quantile by quantile:
    ``mean - pessimism * mean|z_i - mean|`` ``[B, K]`` (a negative ``pessimism`` is optimism)."""
    mean = z.mean(0)
    return mean - pessimism * (z - mean).abs().mean(0)


def bro_target(state: SACState, batch: Batch, key: torch.Tensor) -> torch.Tensor:
    """``soft_target`` with each quantile of ``combine(Z'(s', a'))`` as a value: ``[B, K]``
    atoms."""
    static, pessimism = state.static, state.config.algorithm_options.pessimism
    return soft_target(state, batch, key, lambda next_action, k: combine(
        apply_quantile_critics(static, state.target_critic, batch.next_obs, next_action, k),
        pessimism))


def bro_critic_loss(critic: Params, state: SACState, batch: Batch, target: torch.Tensor,
                    key: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """TQC's ``quantile_critic_loss`` times K: BRO sums the quantile Huber loss over the
    quantiles where TQC averages (``critic.py``'s ``calculate_quantile_huber_loss``)."""
    loss, out = quantile_critic_loss(critic, state, batch, target, key)
    return loss * state.config.algorithm_options.num_quantiles, out


def bro_actor_loss(actor: Params, state: SACState, batch: Batch,
                   key: torch.Tensor) -> Tuple[torch.Tensor, ActorOut]:
    """``funcsac.losses.policy_loss`` with Q the mean over the quantiles of ``combine``."""
    static, pessimism = state.static, state.config.algorithm_options.pessimism
    return policy_loss(actor, state, batch.obs, key, lambda a, k: combine(
        apply_quantile_critics(static, state.critic, batch.obs, a, k), pessimism).mean(-1))


def optimistic_policy(static: Static, params: Params, obs: torch.Tensor, mean: torch.Tensor,
                      std: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The optimistic actor's Gaussian before the tanh for the actor's ``mean, std [B, A]``:
    ``(mean + shift(obs, mean), std_multiplier * std)``."""
    shift = apply_network(static.extra["actor"], params,
                          torch.cat([actor_obs(static.config, obs), mean], -1))
    return mean + shift, std * static.config.algorithm_options.std_multiplier


def _actor_gaussian(state: SACState, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The actor's ``mean, std [B, A]`` before the tanh, without gradient."""
    mean, log_std = actor_gaussian(state.static, state.actor, obs)
    return mean.detach(), torch.exp(log_std).detach()


def explore(state: SACState, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """The optimistic actor's actions ``tanh(mean_o + std_o * noise)`` ``[B, A]`` for
    ``obs [B, input_dim]`` (features, for image observations) and standard normal ``noise``."""
    mean, std = _actor_gaussian(state, obs)
    mean_o, std_o = optimistic_policy(state.static, state.extra["actor"], obs, mean, std)
    return torch.tanh(mean_o + std_o * noise)


def optimistic_step(state: SACState, batch: Batch, key: torch.Tensor,
                    reduce: Optional[Callable] = None) -> Tuple[Dict, Dict]:
    """One AdamW step of the optimistic actor against the state's (new) actor and critics, and
    one Adam step of the optimism and the KL weight on its KL divergence (``reduce``,
    ``Losses.combine``, takes the gradients and the KL first); returns the new ``extra`` and the
    metrics ``optimism``, ``kl_weight`` (before the step), ``kl`` (per action dimension) and
    ``optimistic_loss``."""
    cfg, static, extra = state.config, state.static, state.extra
    opts = cfg.algorithm_options
    k_noise, k_dropout = keys.split(key, 2)
    mean, std = _actor_gaussian(state, batch.obs)
    noise = keys.normal(k_noise, mean.shape, mean.dtype)
    optimism, kl_weight = (adjustment(extra["adjustments"][n]) for n in ("optimism", "kl_weight"))

    def loss_fn(params: Params):
        mean_o, std_o = optimistic_policy(static, {**extra["actor"], **params}, batch.obs, mean,
                                          std)
        z = apply_quantile_critics(static, state.critic, batch.obs,
                                   torch.tanh(mean_o + std_o * noise), k_dropout)
        upper = combine(z, -optimism).mean(-1)
        s = std_o / opts.std_multiplier  # KL(N(mean_o, s) || N(mean, std)), summed over actions
        kl = (torch.log(std / s) + (s.square() + (mean_o - mean).square())
              / (2.0 * std.square()) - 0.5).sum(-1).mean()
        return -upper.mean() + kl_weight * kl, kl

    mask = decay_mask(static.extra["actor"], cfg.weight_decay_on)
    train = trainable(extra["actor"], mask)
    grads, (loss, kl) = grad_and_value(loss_fn)(train)
    if reduce is not None:
        grads, kl = reduce((grads, kl))
    actor, actor_opt, _ = adam_update(grads, extra["actor_opt"], train, state.hparams.actor_lr,
                                      betas=cfg.adam_betas, eps=cfg.adam_eps,
                                      weight_decay=cfg.weight_decay, decay_mask=mask,
                                      max_grad_norm=cfg.max_grad_norm)
    excess = kl / cfg.act_dim - opts.kl_target

    def adjust_loss(p: Params):
        loss = ((adjustment(p["optimism"]) - opts.pessimism) * excess
                - adjustment(p["kl_weight"]) * excess)
        return loss, loss

    adj_grads, _ = grad_and_value(adjust_loss)(extra["adjustments"])
    lr = torch.full_like(kl, opts.adjustment_lr)
    adjustments, adjustments_opt, _ = adam_update(adj_grads, extra["adjustments_opt"],
                                                  extra["adjustments"], lr, betas=(0.5, 0.999),
                                                  eps=cfg.adam_eps)
    new = {"actor": {**extra["actor"], **actor}, "actor_opt": actor_opt,
           "adjustments": adjustments, "adjustments_opt": adjustments_opt}
    metrics = {"optimism": optimism, "kl_weight": kl_weight, "kl": kl / cfg.act_dim,
               "optimistic_loss": loss}
    return new, metrics


def bro_update(state: SACState, batch: Batch, losses: Losses) -> Tuple[SACState, Dict]:
    """BRO's gradient step on a ``prepare``d batch: SAC's (``sac_update``), then the optimistic
    actor's (``optimistic_step``, where the actor is due) against the new actor and critics, on
    the actor's view of the observations."""
    key, k_optimistic = keys.split(state.key, 2)
    stepped, metrics = sac_update(state.replace(key=key), batch, losses)
    if state.static.encoder is not None:
        k_obs, k_optimistic = keys.split(k_optimistic, 2)
        batch = actor_view(stepped, batch, k_obs)
    extra, optimistic_metrics = optimistic_step(stepped, batch, k_optimistic, losses.combine)
    return (when_due(state, stepped.replace(extra=extra), stepped),
            {**metrics, **optimistic_metrics})


def optimistic_actor(config) -> Dict[str, nn.Module]:
    """The optimistic actor: the config's actor network over ``[obs, mean]`` (``input_dim +
    act_dim``) to ``act_dim``, its head bias-free and orthogonal of gain 0.01 (``policies.py``'s
    ``DualTanhPolicy``); ``ValueError`` if the network does not end in a ``Linear``."""
    net = build_network(config, "actor", config.input_dim + config.act_dim, config.act_dim)
    if not (isinstance(net, nn.Sequential) and isinstance(net[-1], nn.Linear)):
        raise ValueError(f"algorithm 'bro' builds its optimistic actor from the network "
                         f"{config.network!r}, which must be an nn.Sequential ending in a Linear "
                         f"head; got {type(net).__name__}")
    head = nn.Linear(net[-1].in_features, config.act_dim, bias=False)
    nn.init.orthogonal_(head.weight, 0.01)
    net[-1] = head
    return {"actor": net}


def init_optimistic(config, modules: Dict[str, nn.Module]) -> dict:
    """``SACState.extra``'s first value: the optimistic actor's parameters and zero moments,
    and the adjustments' parameters for ``init_optimism`` and ``init_kl_weight``."""
    opts = config.algorithm_options
    params = module_params(modules["actor"])
    adjustments = {"optimism": torch.tensor(adjustment_param(opts.init_optimism)),
                   "kl_weight": torch.tensor(adjustment_param(opts.init_kl_weight))}
    mask = decay_mask(modules["actor"], config.weight_decay_on)
    return {"actor": params, "actor_opt": adam_init(trainable(params, mask)),
            "adjustments": adjustments, "adjustments_opt": adam_init(adjustments)}


@dataclasses.dataclass(frozen=True)
class BROOptions:
    """BRO's options (``SACConfig.algorithm_options``), defaults as ``bro_learner.py``'s."""

    num_quantiles: int = setting(100, "quantiles of the return each critic outputs (K)")
    pessimism: float = setting(
        0.0, "the critics' combination: mean minus pessimism times their mean absolute "
        "deviation (BRO: 0)")
    kl_target: float = setting(
        0.05, "KL divergence per action dimension from the optimistic actor to the actor that "
        "the optimism and the KL weight are adjusted to")
    std_multiplier: float = setting(
        0.75, "the optimistic actor's std as a multiple of the actor's")
    init_optimism: float = setting(1.0, "the optimism's initial value")
    init_kl_weight: float = setting(0.25, "the KL weight's initial value")
    adjustment_lr: float = setting(
        3e-5, "learning rate of the optimism and the KL weight (Adam, beta1 0.5)")

    def check(self, config) -> None:
        """``ValueError`` naming an option out of its range."""
        check_num_quantiles(self.num_quantiles)
        lo, hi = (math.exp(x) for x in LOG_RANGE)
        ranges = {"pessimism": (lambda v: True, "a finite number"),
                  "kl_target": (lambda v: v > 0, "a number > 0"),
                  "std_multiplier": (lambda v: v > 0, "a number > 0"),
                  "init_optimism": (lambda v: lo < v < hi, f"in ({lo:.3g}, {hi:.3g})"),
                  "init_kl_weight": (lambda v: lo < v < hi, f"in ({lo:.3g}, {hi:.3g})"),
                  "adjustment_lr": (lambda v: v >= 0, "a number >= 0")}
        for name, (ok, expected) in ranges.items():
            value = getattr(self, name)
            if not (is_real(value) and ok(value)):
                raise ValueError(f"SACConfig.{name} must be {expected}, got {value!r}")


def _check(config) -> None:
    """``ValueError`` for an ``actor_factory`` (the optimistic actor is built from the config's
    network, which must end in a Linear head)."""
    if config.actor_factory is not None:
        raise ValueError("algorithm 'bro' builds its optimistic actor from SACConfig.network; "
                         "it does not take an actor_factory")
    with torch.device("meta"):
        optimistic_actor(config)


BRO = register(Algorithm(
    "bro", Losses(critic=bro_critic_loss, actor=bro_actor_loss,
                  temperature=alpha_temperature_loss, target=bro_target), update=bro_update,
    help="BRO: quantile critics combined by mean and pessimism, an optimistic actor that "
         "explores",
    critic_outputs=quantile_outputs, check=_check, options=BROOptions,
    extra_modules=optimistic_actor, init_extra=init_optimistic, explore=explore,
    metrics=("optimism", "kl_weight", "kl", "optimistic_loss")))
