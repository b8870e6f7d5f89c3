"""SAC's update: one gradient step, ``update(state, batch) -> (state, metrics)``, composed of the
steps of ``funcsac.steps``.

``sac_update`` is SAC's composition, in jaxrl's order: the critics' step, the actor's against the
new critics, the temperature's on the actor's entropy. The actor and the temperature change only
every ``policy_delay`` steps, chosen with tensor arithmetic so that one compiled graph serves
every step; a caller that knows the step (the driver) calls ``critic_update`` where the actor is
not due, and computes nothing in vain. An algorithm that orders or adds steps registers a
composition of its own (``Algorithm.update``: SimBa's actor first, BRO's optimistic actor).
All randomness comes from ``state.key``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Tuple

import torch
import torch.utils._pytree as pytree

from .batch import Batch
from .losses import Losses
from .registry import algorithm_of
from .state import SACState
from .steps import (Metrics, prepare, soft_update, step_keys, steps_for, temperature_step)

METRIC_NAMES = ("critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_mean",
                "target_q_mean", "critic_grad_norm", "actor_grad_norm")


def sac_update(state: SACState, batch: Batch, losses: Losses) -> Tuple[SACState, Metrics]:
    """SAC's gradient step on a ``prepare``d batch: the critics learn, then the actor against
    them and the temperature on the actor's entropy (where the actor is due)."""
    critic_step, actor_step = steps_for(state)
    key, k_critic, k_actor = step_keys(state)
    state, critic_metrics = critic_step(state, batch, k_critic, losses)
    acted, actor_metrics = actor_step(state, batch, k_actor, losses)
    acted, temperature_metrics = temperature_step(acted, actor_metrics["entropy"], losses)
    state = when_due(state, acted, state)
    return (state.replace(key=key, step=state.step + 1),
            {**critic_metrics, **actor_metrics, **temperature_metrics})


def when_due(state: SACState, stepped: SACState, kept: SACState) -> SACState:
    """``stepped``, whose actor, temperature and the algorithm's own state are ``kept``'s where
    the actor is not due at ``state.step`` (every ``policy_delay`` steps), chosen with tensor
    arithmetic."""
    if state.config.policy_delay == 1:
        return stepped
    due = state.step % state.config.policy_delay == 0
    # the names as literals: a stored compiled function cannot look up module globals
    return dataclasses.replace(stepped, **{f: pytree.tree_map(
        lambda n, o: torch.where(due, n, o), getattr(stepped, f), getattr(kept, f))
        for f in ("actor", "actor_opt", "log_alpha", "alpha_opt", "extra")})


def _outputs(state: SACState, metrics: Metrics, with_aux: bool):
    """What an update returns: the new state, the 0-d metrics and, ``with_aux``, the per-row
    outputs (``td_error [B]``)."""
    scalars = {k: v for k, v in metrics.items() if k != "td_error"}
    return (state, scalars, {"td_error": metrics["td_error"]}) if with_aux else (state, scalars)


def make_update(losses: Optional[Losses] = None, with_aux: bool = False) -> Callable:
    """``update(state, batch) -> (state, metrics)``: one gradient step of the state's algorithm
    (its ``Algorithm.update``, SAC's ``sac_update`` by default) with ``losses`` (default: the
    algorithm's); ``with_aux``: ``-> (state, metrics, aux)``, ``aux["td_error"] [B]`` the mean
    over the critics of ``|Q_i(s, a) - target|`` before the step (prioritized replay's new
    priorities)."""
    def update(state: SACState, batch: Batch):
        """One gradient step of the state's algorithm on ``batch``: the new state and a dict of
        0-d metrics (``METRIC_NAMES`` and the algorithm's own), and with ``with_aux`` a dict of
        per-row outputs (``td_error [B]``)."""
        algorithm = algorithm_of(state.config)
        step = algorithm.update or sac_update
        new, metrics = step(state, prepare(state, batch), losses or algorithm.losses)
        return _outputs(new, metrics, with_aux)
    return update


def make_critic_update(losses: Optional[Losses] = None, with_aux: bool = False) -> Callable:
    """``critic_update(state, batch)``: the update of a step whose actor is not due
    (``state.step % policy_delay != 0``), the critic step alone, which gives the same new state
    as ``make_update``'s; the critic's metrics only."""
    def critic_update(state: SACState, batch: Batch):
        """The update of a step whose actor is not due: the critic step alone on ``batch``."""
        critic_step, _ = steps_for(state)
        key, k_critic, _ = step_keys(state)
        new, metrics = critic_step(state, prepare(state, batch), k_critic, losses)
        return _outputs(new.replace(key=key, step=state.step + 1), metrics, with_aux)
    return critic_update


update = make_update()
update_with_aux = make_update(with_aux=True)
critic_update = make_critic_update()

__all__ = ["METRIC_NAMES", "critic_update", "make_critic_update", "make_update", "sac_update",
           "soft_update", "update", "update_with_aux", "when_due"]
