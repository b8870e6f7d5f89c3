"""SimBa's SAC (Lee et al. 2024; SonyResearch/simba scale_rl/agents/sac/sac_agent.py and
sac_update.py): each gradient step takes the actor's step first (against the critics before
theirs), then the temperature's on the actor's entropy with the loss ``alpha * (entropy -
target)``, then the critics' against the new actor and temperature, their squared errors summed
without SAC's 1/2, then the targets' polyak average. The ``simba`` preset adds SimBa's networks.
"""
from __future__ import annotations

from typing import Tuple

import torch

from ...batch import Batch
from ...losses import CriticOut, Losses, alpha_temperature_loss, critic_loss
from ...registry import Algorithm, register
from ...state import SACState
from ...steps import Metrics, step_keys, steps_for, temperature_step
from ...updates import when_due


def actor_first_update(state: SACState, batch: Batch, losses: Losses
                       ) -> Tuple[SACState, Metrics]:
    """SimBa's gradient step on a ``prepare``d batch: the actor learns against the critics and
    the temperature on its entropy (where the actor is due), then the critics against them."""
    critic_step, actor_step = steps_for(state)
    key, k_critic, k_actor = step_keys(state)
    acted, actor_metrics = actor_step(state, batch, k_actor, losses)
    acted, temperature_metrics = temperature_step(acted, actor_metrics["entropy"], losses)
    state, critic_metrics = critic_step(when_due(state, acted, state), batch, k_critic, losses)
    return (state.replace(key=key, step=state.step + 1),
            {**critic_metrics, **actor_metrics, **temperature_metrics})


def simba_critic_loss(*args) -> Tuple[torch.Tensor, CriticOut]:
    """``mean_B weight * (Q_i - target)^2`` summed over the critics (``critic_loss``'s
    arguments), as SimBa's ``critic_loss_fn``."""
    loss, out = critic_loss(*args)
    return 2.0 * loss, out


SIMBA = register(Algorithm(
    "simba", Losses(critic=simba_critic_loss, temperature=alpha_temperature_loss),
    update=actor_first_update,
    help="SimBa's SAC: the actor's and the temperature's steps first, then the critics'"))
