"""CrossQ (Bhatt et al. 2024): no target network; the critics see the current and the next
state-action pairs in one joint forward pass, batch-renormalised together, and the target is
built from that pass's values of the next pairs (without gradient).

``algorithm="crossq"`` selects these losses and a state without target critics; the ``crossq``
preset adds batch renormalisation to the critics and the actor (``critic_batch_renorm``,
``actor_batch_renorm``: after each activation, as sbx's ``crossq`` places it), ``policy_delay`` 3
and Adam's beta1 0.5 for the networks (the temperature keeps 0.9), as sbx's CrossQ does.

Shapes: ``B`` batch rows, ``N`` critics.
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch

from ... import keys
from ...batch import Batch
from ...losses import (CriticOut, Losses, bootstrap, next_policy, reduce_critics,
                      target_subset)
from ...networks import Params, apply_critics_training
from ...registry import Algorithm, register
from ...state import SACState


def crossq_target(state: SACState, batch: Batch, key: torch.Tensor) -> Dict[str, torch.Tensor]:
    """What the critic loss's joint pass needs of the target: the next actions
    ``a' ~ pi(.|s') [B, A]`` and their entropy bonus ``-alpha * log pi(a'|s') [B]``."""
    next_action, bonus = next_policy(state, batch, key)
    return {"next_action": next_action, "bonus": bonus}


def crossq_critic_loss(critic: Params, state: SACState, batch: Batch,
                       target: Dict[str, torch.Tensor],
                       key: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """``0.5 * mean_B weight * (Q_i(s, a) - y)^2`` summed over the critics, with
    ``y = r + gamma^horizon * (1 - terminated) * (min_M Q(s', a') + bonus)`` from the same
    joint pass over ``[(s, a); (s', a')]`` (``[2B]`` rows, one set of batch statistics), ``y``
    without gradient; the min runs over a random ``num_target_critics`` of the critics. Returns
    ``(loss, CriticOut(Q [N, B], y [B], the new running statistics))``."""
    cfg, B = state.config, batch.obs.shape[0]
    k_pass, k_subset = keys.split(key, 2)
    q_both, stats = apply_critics_training(
        state.static.critic, critic, torch.cat([batch.obs, batch.next_obs]),
        torch.cat([batch.action, target["next_action"]]), k_pass)
    q, q_next = q_both[:, :B], q_both[:, B:].detach()
    q_next = target_subset(cfg, q_next, k_subset)
    y = bootstrap(state, batch, reduce_critics(q_next, cfg.target_q_reduction) + target["bonus"])
    loss = 0.5 * (batch.weight * (q - y).square()).mean(-1).sum(0)
    return loss, CriticOut(q, y, stats)


CROSSQ = register(Algorithm(
    "crossq", Losses(critic=crossq_critic_loss, target=crossq_target),
    help="no target networks; critics batch-renormalised over the current and next pairs in "
         "one pass", target_networks=False))
