"""SimBa's SAC (Lee et al. 2024; SonyResearch/simba scale_rl/agents/sac/sac_agent.py and
sac_update.py): each gradient step takes the actor's step first (against the critics before
theirs), then the temperature's on the actor's entropy with the loss ``alpha * (entropy -
target)``, then the critics' against the new actor and temperature, their squared errors summed
without SAC's 1/2, then the targets' polyak average. The ``simba`` preset adds SimBa's networks.
"""
from __future__ import annotations

from typing import Tuple

import torch

from ..losses import CriticOut, Losses, alpha_temperature_loss, critic_loss
from ..registry import Algorithm, register


def simba_critic_loss(*args) -> Tuple[torch.Tensor, CriticOut]:
    """``mean_B weight * (Q_i - target)^2`` summed over the critics (``critic_loss``'s
    arguments), as SimBa's ``critic_loss_fn``."""
    loss, out = critic_loss(*args)
    return 2.0 * loss, out


SIMBA = register(Algorithm(
    "simba", Losses(critic=simba_critic_loss, temperature=alpha_temperature_loss),
    actor_first=True,
    help="SimBa's SAC: the actor's and the temperature's steps first, then the critics'"))
