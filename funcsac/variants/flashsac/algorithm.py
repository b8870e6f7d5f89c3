"""FlashSAC's SAC (Kim et al. 2026; leeyngdo/FlashSAC ``flash_rl/agents/flashSAC/update.py`` and
``agent.py``): SimbaV2's order and categorical critics, with batch statistics taken over the
current and the next rows together.

Each step: the actor's, in training mode over ``[s; s']`` (``[2B]`` rows, one set of batch
statistics), its loss ``mean_B(alpha * log pi(a|s) - min_i Q_i(s, a))`` on the current rows
against the critics in evaluation mode (their running statistics); the temperature's on those
rows' entropy, loss ``alpha * (entropy - target)``; then the critics', against the new actor
(in evaluation mode: ``a' ~ pi(.|s')``) and temperature: the online and the target critics
each run in training mode over ``[(s, a); (s', a')]``, the target distribution is
``categorical_q``'s projection from the next rows of the target critics' pass, and the loss the
cross-entropy on the current rows of the online pass, averaged over the critics (SimbaV2 sums
them); then the targets' average. The ``flashsac`` preset adds FlashSAC's networks
(``network="flashsac"``), its reward scaling, learning-rate decay and held exploration noise.

Shapes: ``B`` batch rows, ``N`` critics, ``K`` bins.
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch

from ... import keys
from ...batch import Batch
from ...losses import (ActorOut, CriticOut, Losses, alpha_temperature_loss, next_policy,
                      reduce_critics, sample_action, target_subset)
from ...networks import Params, apply_critics_training
from ...registry import Algorithm, register
from ...state import SACState, Static
from ..categorical_q.algorithm import (CategoricalOptions, apply_log_probs, expected_values,
                                       log_probs_of, num_bins, projected_target, support)
from ..simba.algorithm import actor_first_update


def joint_pass(static: Static, critic: Params, batch: Batch, next_action: torch.Tensor,
               key: torch.Tensor) -> Tuple[torch.Tensor, Params]:
    """The critics in training mode over ``[(s, a); (s', a')]``: ``(log-probabilities
    [N, 2B, K], their new running statistics)``."""
    logits, stats = apply_critics_training(
        static.critic, critic, torch.cat([batch.obs, batch.next_obs]),
        torch.cat([batch.action, next_action]), key)
    return log_probs_of(static, logits), stats


def flashsac_target(state: SACState, batch: Batch, key: torch.Tensor) -> Dict[str, torch.Tensor]:
    """What the critic loss needs: ``next_action`` ``a' ~ pi(.|s')`` (the actor in evaluation
    mode) and ``probs [B, K]``, the projected target from the next rows of the target critics'
    training-mode pass (whose new running statistics are dropped: FlashSAC never reads the
    target critics' own)."""
    cfg, static = state.config, state.static
    k_action, k_subset, k_pass = keys.split(key, 3)
    next_action, bonus = next_policy(state, batch, k_action)
    log_probs, _ = joint_pass(static, target_subset(cfg, state.target_critic, k_subset), batch,
                              next_action, k_pass)
    B = batch.obs.shape[0]
    return {"next_action": next_action,
            "probs": projected_target(state, batch, log_probs[:, B:], bonus)}


def flashsac_critic_loss(critic: Params, state: SACState, batch: Batch,
                         target: Dict[str, torch.Tensor],
                         key: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """``-mean_{N, B} weight * sum_j target_j log p_ij`` on the current rows of the critics'
    training-mode pass over ``[(s, a); (s', a')]``; returns ``(loss, CriticOut(Q [N, B],
    target [B], the new running statistics))``, expected values."""
    cfg, B, probs = state.config, batch.obs.shape[0], target["probs"]
    log_probs, stats = joint_pass(state.static, critic, batch, target["next_action"], key)
    log_probs = log_probs[:, :B]
    loss = -(batch.weight * (probs * log_probs).sum(-1)).mean()
    return loss, CriticOut(expected_values(cfg, log_probs), (probs * support(cfg, probs)).sum(-1),
                           stats)


def flashsac_actor_loss(actor: Params, state: SACState, batch: Batch,
                        key: torch.Tensor) -> Tuple[torch.Tensor, ActorOut]:
    """``mean_B(alpha * log pi(a|s) - Q(s, a))`` with the actor in training mode over the
    current and the next observations ``[s; s']`` (``[2B]`` rows, one set of batch statistics;
    ``a ~ pi`` drawn for each), the loss on the current half, ``Q`` the critics' expected values
    in evaluation mode combined by ``actor_q_reduction``. Returns ``(loss, ActorOut(log_prob [B],
    the actor's new running statistics))``."""
    cfg, static, B, stats = state.config, state.static, batch.obs.shape[0], {}
    action, log_prob = sample_action(actor, static, torch.cat([batch.obs, batch.next_obs]), key,
                                     stats)
    action, log_prob = action[:B], log_prob[:B]
    q = reduce_critics(expected_values(cfg, apply_log_probs(static, state.critic, batch.obs,
                                                            action)), cfg.actor_q_reduction)
    return (torch.exp(state.log_alpha) * log_prob - q).mean(), ActorOut(log_prob, stats)


def _check(config) -> None:
    """``ValueError`` for image observations (the actor's step reads the next observations as
    vectors)."""
    if config.image_shape:
        raise ValueError("SACConfig.algorithm='flashsac' takes vector observations (its actor "
                         f"step normalises over the next ones too), got image_shape "
                         f"{config.image_shape}")


FLASHSAC = register(Algorithm(
    "flashsac", Losses(critic=flashsac_critic_loss, actor=flashsac_actor_loss,
                       target=flashsac_target, temperature=alpha_temperature_loss),
    update=actor_first_update, critic_outputs=num_bins, options=CategoricalOptions,
    check=_check,
    help="FlashSAC's SAC: SimbaV2's order over categorical critics, batch statistics over the "
         "current and next rows"))
