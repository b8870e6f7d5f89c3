"""SimbaV2's SAC (Lee et al. 2025; dojeon-ai/SimbaV2 scale_rl/agents/simbaV2/simbaV2_agent.py and
simbaV2_update.py): SimBa's order (the actor's step, the temperature's with the loss ``alpha *
(entropy - target)``, then the critics' against the new actor and temperature, then the
targets' average) over categorical critics (``categorical_q``'s target, cross-entropy and
options: 101 bins on ``[-5, 5]``). The ``simbav2`` preset adds SimbaV2's networks
(``network="simbav2"``), its reward scaling and its learning-rate decay.
"""
from __future__ import annotations

from ...losses import Losses, alpha_temperature_loss
from ...registry import Algorithm, register
from ..simba.algorithm import actor_first_update
from ..categorical_q.algorithm import (CategoricalOptions, categorical_actor_loss,
                                       categorical_critic_loss, categorical_target, num_bins)

SIMBAV2 = register(Algorithm(
    "simbav2", Losses(critic=categorical_critic_loss, actor=categorical_actor_loss,
                      target=categorical_target, temperature=alpha_temperature_loss),
    update=actor_first_update, critic_outputs=num_bins,
    options=CategoricalOptions,
    help="SimbaV2's SAC: SimBa's order over categorical critics (num_bins over [v_min, v_max])"))
