"""Discrete SAC (SAC-Discrete, Christodoulou 2019): a categorical policy over ``n`` actions and
critics that output the values of all ``n`` actions, so the target, the actor loss and the entropy
are exact expectations over actions rather than samples.

Shapes: ``B`` batch rows, ``N`` critics, ``n`` actions (``SACConfig.act_dim``); a ``Batch``
holds each action as its index, ``action [B, 1]`` (float).
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
from torch import nn

from ... import keys
from ...batch import Batch
from ...losses import ActorOut, CriticOut, Losses, bootstrap, reduce_critics, target_subset
from ...networks import Params, apply_network, dropout_key_names, map_critics, with_dropout_keys
from ...policy import PolicyFamily, actor_obs
from ...registry import Algorithm, register, register_policy
from ...state import SACState


def apply_logits(template: nn.Module, params: Params, obs: torch.Tensor) -> torch.Tensor:
    """The policy's log-probabilities of every action, ``obs [B, obs_dim] -> [B, n]``."""
    return torch.log_softmax(apply_network(template, params, obs), dim=-1)


def apply_q_values(template: nn.Module, params: Params, obs: torch.Tensor,
                   key: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The ensemble's values of every action: stacked params ``[N, ...]``, ``obs [B, obs_dim]``
    -> ``Q [N, B, n]``; with a ``key`` each critic draws its own dropout masks."""
    names = dropout_key_names(template)

    def one(p, k):
        return apply_network(template, with_dropout_keys(p, names, k), obs)

    return map_critics(one, template, params, key)


def gumbel(noise: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel numbers from standard normal ``noise`` (through its uniform CDF)."""
    u = torch.special.ndtr(noise).clamp(1e-12, 1.0 - 1e-7)
    return -torch.log(-torch.log(u))


class Categorical(PolicyFamily):
    """``n`` discrete actions; the actor outputs their logits ``[B, n]``; an action is stored as
    its index ``[B, 1]``. A sample is the Gumbel-max of the logits.

    Defaults: the target entropy is ``0.25 * log n``, transitions are 3-step, training starts
    after 2,000 random steps and the driver holds each noise draw (the Gumbel perturbation of
    the logits, and each random action before training) for 1-32 steps, P(n) ~ 1/n, 7.9 steps
    on average. Christodoulou's
    ``0.98 * log n`` (CleanRL: 0.89) holds the policy near uniform for the whole run: where a task
    pays -1 a step until a goal (Acrobot, MountainCar) a near-uniform policy rarely reaches the
    goal, and once it does the temperature climbs to keep the entropy up until the entropy bonus
    ``alpha * H`` outweighs the step cost and ending the episode looks worse than going on. With
    one-step targets and polyak 0.005 the value of the goal crosses a few hundred steps of
    such a task too slowly; 3-step returns (Rainbow's n) carry it 3 times as far per update.
    Measured on Acrobot-v1 (25,000 steps): 0.89 log n with 1-step or 3-step transitions, and
    0.25 log n with 1-step ones, stay at -500; 0.25 and 0.1 log n with 3-step reach -75 to -90.
    With those two, 2,000 random steps before training let 5 of 6 seeds reach -120 or better
    within 25,000 steps (seeds 1-6), 5,000 let 1 of 6 (rl-baselines3-zoo's DQN starts after 0 or
    1,000; ``bench/campaigns/discrete.py`` has the comparison with DQN). Where the goal is far,
    as on
    MountainCar-v0, actions drawn afresh each step dither in place and never reach it (0 times
    in 20,000 uniformly random steps, 3 seeds); held ones swing the car, reaching it 4-8 times
    in as many steps, and the held noise brought MountainCar seeds 1-3 from -200, -148, -200 to
    -114, -101, -99 at 20,000 steps, and Acrobot's to -120 or better by 10,000."""

    action_space = "action indices in [0, act_dim)"
    default_n_step = 3
    default_learning_starts = 2000
    default_noise_hold = 1.0
    default_noise_hold_max = 32

    def head_size(self, act_dim):
        return act_dim

    def action_size(self, act_dim):
        return 1

    def default_target_entropy(self, act_dim):
        return 0.25 * math.log(act_dim)

    def critic_dims(self, input_dim, act_dim, outputs):
        return input_dim, act_dim  # all actions' values

    def act(self, static, actor, obs, noise=None):
        logits = apply_network(static.actor, actor, actor_obs(static.config, obs))
        if noise is not None:
            logits = logits + gumbel(noise.to(logits.dtype))
        return logits.argmax(-1, keepdim=True).to(obs.dtype)

    def random_action(self, noise):
        return gumbel(noise).argmax(-1, keepdim=True).to(noise.dtype)

    def valid_actions(self, action, act_dim):
        return ((action >= 0) & (action < act_dim) & (action == action.round())).all()


register_policy("categorical", Categorical())


def discrete_target(state: SACState, batch: Batch, key: torch.Tensor) -> torch.Tensor:
    """``r + gamma^horizon * (1 - terminated) * sum_a pi(a|s') (min_M Q_target(s', a)
    - alpha * log pi(a|s'))`` [B]; the min (or mean, ``target_q_reduction``) over a random
    ``num_target_critics`` of the targets."""
    cfg, static = state.config, state.static
    k_subset, k_dropout = keys.split(key, 2)
    log_p = apply_logits(static.actor, state.actor, actor_obs(cfg, batch.next_obs))
    target = target_subset(cfg, state.target_critic, k_subset)
    q = reduce_critics(apply_q_values(static.critic, target, batch.next_obs, k_dropout),
                       cfg.target_q_reduction)
    soft_value = (log_p.exp() * (q - torch.exp(state.log_alpha) * log_p)).sum(-1)
    return bootstrap(state, batch, soft_value)


def discrete_critic_loss(critic: Params, state: SACState, batch: Batch, target: torch.Tensor,
                         key: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """``0.5 * mean_B weight * (Q_i(s, a) - target)^2`` summed over the critics, ``a`` the
    batch's action indices ``[B, 1]``; returns ``(loss, CriticOut(Q [N, B], target))``."""
    q_all = apply_q_values(state.static.critic, critic, batch.obs, key)  # [N, B, n]
    index = batch.action.long().expand(q_all.shape[0], -1, -1)  # [N, B, 1]
    q = q_all.gather(-1, index).squeeze(-1)
    return 0.5 * (batch.weight * (q - target).square()).mean(-1).sum(0), CriticOut(q, target)


def discrete_actor_loss(actor: Params, state: SACState, batch: Batch,
                        key: torch.Tensor) -> Tuple[torch.Tensor, ActorOut]:
    """``mean_B sum_a pi(a|s) (alpha * log pi(a|s) - Q(s, a))``, Q the min (or mean, per
    ``config.actor_q_reduction``) over the critics; returns ``(loss, ActorOut(E_pi[log pi] [B]))``,
    the negative entropy, which the temperature loss takes in place of a sampled log-prob."""
    static = state.static
    log_p = apply_logits(static.actor, actor, actor_obs(state.config, batch.obs))
    q = reduce_critics(apply_q_values(static.critic, state.critic, batch.obs, key),
                       state.config.actor_q_reduction)
    p = log_p.exp()
    alpha = torch.exp(state.log_alpha)
    return (p * (alpha * log_p - q)).sum(-1).mean(), ActorOut((p * log_p).sum(-1))


DISCRETE_SAC = register(Algorithm(
    "sac", Losses(critic=discrete_critic_loss, actor=discrete_actor_loss, target=discrete_target),
    policy="categorical", help="SAC-Discrete: exact expectations over the actions"))
