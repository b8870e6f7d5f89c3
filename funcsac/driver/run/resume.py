"""Resuming a run: whether a checkpoint fits the configuration, the dynamic hyperparameters a
resume changes, and fresh episodes for sub-environments whose state was not saved."""
from __future__ import annotations

import dataclasses
import json
import warnings

import torch

from ...state import HParams, SACState
from ..config import ENV_SETTLED, RESUME_MAY_CHANGE, TrainConfig
from ..envs.state import unsaveable_envs
from .agents import parse_sweep
from .checkpoint import CheckpointError
from .seeds import fresh_episode_seed
from .status import LOGGER

PAYLOAD_KEYS = {"config", "agent", "buffers", "progress", "envs"}


def check_resumable(config: TrainConfig, payload: dict) -> TrainConfig:
    """``config`` with the settings it leaves to the environment (``ENV_SETTLED``, those None)
    as the checkpoint's run settled them; ``CheckpointError`` unless ``payload`` is a run
    checkpoint of that config (which may differ in ``RESUME_MAY_CHANGE``)."""
    missing = PAYLOAD_KEYS - set(payload)
    if missing:
        raise CheckpointError(f"checkpoint lacks {sorted(missing)}: not written by this funcsac")
    plain = lambda v: json.loads(json.dumps(v))  # noqa: E731  (tuples and lists compare equal)
    # a setting newer than the checkpoint had its default value there (the feature was off:
    # one-step transitions before n_step existed, a fresh noise draw each step before noise_hold)
    saved = {**TrainConfig.field_defaults(), "n_step": 1, "noise_hold": 0.0, "noise_hold_max": 16,
             **payload["config"]}
    config = dataclasses.replace(config, **{k: saved[k] for k in ENV_SETTLED
                                            if getattr(config, k) is None})
    diff = {k: (saved.get(k), v) for k, v in config.to_dict().items()
            if k not in RESUME_MAY_CHANGE and plain(saved.get(k)) != plain(v)}
    if diff:
        lines = ", ".join(f"{k}: checkpoint {a!r} vs now {b!r}" for k, (a, b) in diff.items())
        raise CheckpointError(f"the checkpoint belongs to a different configuration ({lines}); "
                              "only run-length and logging settings and dynamic "
                              f"hyperparameters ({', '.join(HParams._fields)}) may change on "
                              "resume")
    return config


def retune(state: SACState, config: TrainConfig, saved: dict, spec) -> tuple:
    """``(state, changed)``: ``state`` with the dynamic hyperparameters whose configured value
    differs from the checkpoint's config ``saved`` set to the new value (for every agent; a
    sweep's own values stay), and those new values by name."""
    new = config.agent_config(spec)
    old = TrainConfig.from_dict(saved).agent_config(spec)
    swept, _ = parse_sweep(config.sweep)
    changed = {k: getattr(new, k) for k in HParams._fields
               if k != swept and getattr(old, k) != getattr(new, k)}
    if changed:
        LOGGER.info("resumed with " + ", ".join(
            f"{k} {getattr(old, k)} -> {v}" for k, v in changed.items()))
    hp = state.hparams
    return state.replace(hparams=hp._replace(
        **{k: torch.full_like(getattr(hp, k), v) for k, v in changed.items()})), changed


def start_fresh_episodes(envs, indices: list, progress, agents: list, config) -> None:
    """Sub-environments ``indices`` (whose state was not saved) start fresh episodes, seeded by
    their agent, their index and the env step; resume is not exact, and says so."""
    n, p = config.num_envs, progress
    reasons = unsaveable_envs(envs)
    warnings.warn(f"resume is not exact for {config.env_id}: sub-environment(s) "
                  f"{indices} start fresh episodes, because {reasons[indices[0]]}",
                  stacklevel=3)
    seeds = [fresh_episode_seed(agents[i // n].seed, i % n, p.env_step)
             for i in range(len(p.obs))]
    if len(indices) == len(p.obs):
        p.obs, _ = envs.reset(seed=seeds)
    else:
        for i in indices:
            p.obs[i], _ = envs.envs[i].reset(seed=seeds[i])
            envs._autoreset_envs[i] = False
    p.prev_done[indices] = False
    p.episode_return[indices] = 0.0
    p.episode_length[indices] = 0
