"""An agent started over mid-run (BRO's and SimBa's resets): new networks, same step."""
from __future__ import annotations

import optree
import torch

from . import keys
from .registry import NAMESPACE
from .state import SACState, init_state


# the fields ``reset_params`` draws afresh
RESET_FIELDS = ("actor", "critic", "target_critic", "actor_opt", "critic_opt", "alpha_opt",
                "encoder", "target_encoder", "extra", "log_alpha")


def reset_params(state: SACState) -> SACState:
    """``state`` with its networks started over, as BRO's resets do (Nauman et al. 2024): new
    actor and critic weights, targets equal to the new critics, zero Adam moments and counts,
    the temperature back at ``config.init_alpha`` and the algorithm's own state (``extra``)
    fresh (the fields ``RESET_FIELDS``).

    The weights are those ``init_state`` draws from a seed made of a key split off
    ``state.key``, which moves on; the step count, the dynamic hyperparameters and the running
    statistics stay. A stack of states (a leading agent axis, as ``vmap`` takes them) resets each
    agent from its own key. Eager only: it seeds torch's initialisers on the host.
    """
    if state.step.dim() > 0:
        agents = [optree.tree_map(lambda x: x[i], state, namespace=NAMESPACE)
                  for i in range(state.step.shape[0])]
        return optree.tree_map(lambda *xs: torch.stack(xs), *map(reset_params, agents),
                               namespace=NAMESPACE)
    key, k_reset = keys.split(state.key, 2)
    high, low = k_reset.tolist()
    fresh = init_state(state.config, seed=(high << 32) | low)
    return state.replace(key=key, **{name: getattr(fresh, name) for name in RESET_FIELDS})
