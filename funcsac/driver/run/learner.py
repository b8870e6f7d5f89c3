"""The learn stage (``Learner``): each vector step's gradient steps of every agent, on batches
drawn from the replay buffers, through the run's step functions (``step_functions``), compiled
where the run compiles (``compiled_step``)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch

from ...losses import Losses
from ...state import SACConfig, SACState
from ..config import TrainConfig
from ..envs.spec import EnvSpec
from ..replay.buffer import ReplayBuffer
from ..replay.sampling import sample_batches
from .agents import split_keys
from .compiled_step import CompiledStep
from .step_functions import example_batches, step_functions


class Learner:
    """The learn stage: ``vector_gradient_steps`` of every agent per vector step, once
    learning has started, on batches drawn from ``buffers`` (and ``offline``, RLPD's data); with
    prioritized replay, the rows' new priorities. ``metrics`` holds the last step's. ``losses``:
    the algorithm's unless given (a data-parallel rank's, whose steps are compiled here, not
    kept in the compile store)."""

    def __init__(self, config: TrainConfig, spec: EnvSpec, sac_config: SACConfig, state: SACState,
                 buffers: list, offline: Optional[ReplayBuffer], progress, timings, log: Path,
                 losses: Optional[Losses] = None):
        self.config, self.buffers, self.offline = config, buffers, offline
        self.progress, self.timings = progress, timings
        self.fns = step_functions(config, len(buffers), losses)
        self.step = (CompiledStep(self.fns, (state, example_batches(
            config, spec, sac_config, len(buffers))), config.compile_in_background, config,
            spec, log, stored=losses is None) if config.compile else None)
        self.metrics = None

    def learn(self, state: SACState) -> SACState:
        """``state`` after this vector step's gradient steps (unchanged before learning starts,
        or while the online buffer holds fewer rows than a batch takes from it)."""
        cfg, p = self.config, self.progress
        online = cfg.batch_size - (0 if self.offline is None
                                   else cfg.offline_rows)
        if p.env_step < cfg.learning_starts or self.buffers[0].size < online:
            return state
        # the update, or its critic half where the actor is not due (p.updates is state.step)
        update, *critic = self.fns
        name = critic[0] if critic and p.updates % cfg.policy_delay else update
        if self.step is not None and self.step.due():
            with self.timings.phase("compile"):
                self.step.function(name)
        with self.timings.phase("update"):
            p.key, k_sample = split_keys(p.key)
            rows, positions = self.sample(state, k_sample, cfg.vector_gradient_steps)
            fn = self.fns[name] if self.step is None else self.step.function(name)
            state, metrics, *aux = fn(state, rows)
            self.metrics = {**(self.metrics or {}), **metrics}  # the actor's from its last step
            if aux:  # prioritized replay: the rows' new priorities from their TD errors
                td_error = aux[0]["td_error"].reshape(len(self.buffers), -1)
                for buffer, where, td in zip(self.buffers, positions, td_error):
                    buffer.set_priorities(where, td)
            p.updates += cfg.vector_gradient_steps
        return state

    def sample(self, state: SACState, key: torch.Tensor, k: int):
        """Each agent's ``k`` batches and the positions of their online rows
        (``sample_batches``); prioritized replay's beta anneals to 1 over the steps the run
        began with."""
        cfg, p = self.config, self.progress
        beta = cfg.priority_beta + (1.0 - cfg.priority_beta) * min(1.0, p.env_step / p.beta_horizon)
        return sample_batches(self.buffers, self.offline, key, k, cfg.batch_size,
                              cfg.offline_rows,
                              state.hparams.gamma.reshape(len(self.buffers)), beta)

    def close(self) -> None:
        if self.step is not None:
            self.step.close()
