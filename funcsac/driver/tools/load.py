"""A trained run as an ``Agent``: its final state, its configuration and an ``act`` in the
environment's own action scale, from the run directory alone."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Optional, Union

import numpy as np
import torch

from ... import keys
from ...acting import act
from ...batch import map_obs
from ...platform.devices import check_device
from ...state import SACState, init_state
from ..run.agents import AgentSpec, agent_specs, select, stack
from ..run.checkpoint import CHECKPOINT, CheckpointError, load_checkpoint, restore_state
from ..config import TrainConfig
from ..envs.observations import obs_tensors
from ..envs.spec import EnvSpec, env_spec, scale_action
from ..envs.make import make_eval_env, make_vector_env
from ..run.seeds import AgentSeeds


@dataclasses.dataclass
class Agent:
    """The agents of a run (stacked along a leading axis when there are several; ``agent[i]`` is
    one of them), as their last checkpoint left them at env step ``step``."""

    state: SACState
    config: TrainConfig
    spec: EnvSpec
    agent_specs: List[AgentSpec]  # seed and hyperparameter overrides of each agent
    step: int
    run_dir: Path
    key: Optional[torch.Tensor] = None  # for stochastic actions without a given key

    def __len__(self) -> int:
        return len(self.agent_specs)

    def __getitem__(self, i: int) -> "Agent":
        if not -len(self) <= i < len(self):
            raise IndexError(f"agent {i} out of range: the run has {len(self)} agent(s)")
        i %= len(self)
        return dataclasses.replace(self, state=select(self.state, i, len(self)),
                                   agent_specs=[self.agent_specs[i]], key=None)

    @property
    def eval_seed(self) -> int:
        """The seed of the first evaluation episode during training (episode i: seed + i)."""
        return AgentSeeds.of(self.agent_specs[0].seed, self.config.num_envs).eval

    def env(self, render_mode: Optional[str] = None):
        """A new environment of the run, observed as the run observed its own (rendered frames
        stacked for a pixels run; a ``Dict``'s entries converted; ``envs.make.make_eval_env``)."""
        return make_eval_env(self.config.env_id, render_mode, pixels=self.config.pixel_settings,
                             repeat=self.config.repeat)

    def observation(self, obs):
        """``obs`` (one observation or a batch; numpy or torch) as the agent takes it: as the
        run's environment returns it, converted the way the run converted its own (a ``Dict``'s
        entries to ``"pixels"`` and ``"state"``, images channels first: ``RawObservation``), or
        already so. A pixels run's agent takes the stacked frames that ``env()`` observes:
        ``ValueError`` saying so for anything else."""
        cfg, raw = self.state.config, self.spec.raw
        if _fits(obs, cfg):
            return obs
        if raw is not None and raw.fits(obs):
            first = _first(obs)
            if not isinstance(first, torch.Tensor):
                return raw(obs)
            converted = raw(map_obs(lambda x: x.cpu().numpy(), obs))
            return map_obs(lambda x: torch.as_tensor(x, device=first.device), converted)
        if self.config.pixels:
            k, size = self.config.frame_stack, self.config.image_size
            state = " with the env's state beside them" if cfg.obs_parts else ""
            raise ValueError(f"this agent acts on the last {k} frames rendered from "
                             f"{self.config.env_id}, stacked: uint8 [{3 * k}, {size}, {size}]"
                             f"{state}, as the run observed them: step the environment that "
                             "agent.env() makes, which renders and stacks them")
        return obs

    def act(self, obs, deterministic: bool = True, key: Optional[torch.Tensor] = None):
        """Actions in the environment's bounds for observations as the run's environment returns
        them (``observation``): ``[B, ...]`` or one, numpy (returned as numpy in the action
        space's dtype) or torch (returned as a tensor on the agent's device). Stochastic actions
        draw from ``key``, else from the agent's own key, which advances with each call."""
        if len(self) > 1:
            raise ValueError(f"this run has {len(self)} agents; act with one of them: agent[i]")
        cfg = self.state.config
        obs = self.observation(obs)
        as_numpy = not isinstance(_first(obs), torch.Tensor)
        obs_t = obs_tensors(map_obs(np.asarray, obs) if as_numpy else obs, cfg)
        if not deterministic and key is None:
            if self.key is None:
                self.key = keys.make_key(self.agent_specs[0].seed, cfg.device)
            self.key, key = keys.split(self.key, 2)
        with torch.no_grad():
            action = act(self.state, obs_t, deterministic, key)
        return scale_action(action.cpu().numpy() if as_numpy else action, self.spec)


def _first(obs):
    """An observation's array, or the first entry of a dict observation."""
    return next(iter(obs.values())) if isinstance(obs, dict) and obs else obs


def _fits(obs, cfg) -> bool:
    """Whether ``obs`` has the agent's own layout (``cfg.obs_parts``, or ``cfg.obs_shape``)."""
    def ends_with(x, shape):
        return tuple(np.shape(x)[-len(shape):]) == tuple(shape)
    if cfg.obs_parts:
        return isinstance(obs, dict) and set(obs) == set(cfg.obs_parts) and all(
            ends_with(obs[k], shape) for k, (shape, _) in cfg.obs_parts.items())
    return not isinstance(obs, dict) and ends_with(obs, cfg.obs_shape)


def load(run_dir: Union[str, Path], device: str = "cpu") -> Agent:
    """The agent(s) of the run in ``run_dir`` from its checkpoint, on ``device`` (a run trained
    on a GPU loads on the CPU). Raises ``CheckpointError`` (a ``ValueError``) when ``run_dir``
    holds no funcsac run or its checkpoint is damaged or inconsistent, and ``ValueError`` for a
    device this torch cannot use (before reading anything)."""
    device = check_device(device)
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir} is not a directory: expected a funcsac run directory")
    if not (run_dir / CHECKPOINT).is_file():
        raise CheckpointError(f"{run_dir} holds no funcsac run: no checkpoint ({CHECKPOINT}) in it")
    payload = load_checkpoint(run_dir / CHECKPOINT)
    try:
        config = TrainConfig.from_dict({**payload["config"], "device": device})
        step = int(payload["progress"]["env_step"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{run_dir / CHECKPOINT} holds no valid run configuration "
                              f"({e})") from e
    spec = _saved_spec(payload, config)
    sac_config = config.agent_config(spec)
    specs = agent_specs(config.seed, config.num_seeds, config.sweep)
    template = stack([init_state(sac_config, seed=0) for _ in specs])
    state = restore_state(template, payload["agent"])
    return Agent(state, config, spec, specs, step, run_dir)


def _saved_spec(payload: dict, config: TrainConfig) -> EnvSpec:
    """The environment's sizes and action bounds as the checkpoint keeps them, or (checkpoints
    that lack them) as the environment says."""
    if "env_spec" in payload:
        try:
            return EnvSpec.from_dict(payload["env_spec"])
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"checkpoint's environment description is malformed ({e})") from e
    envs = make_vector_env(config.env_id, 1, pixels=config.pixel_settings, repeat=config.repeat)
    try:
        return env_spec(envs, config.pixels)
    finally:
        envs.close()
