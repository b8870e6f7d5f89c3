"""Environments that step a batch of N at once on torch tensors, on the training device: the
protocol (``BatchedEnv``), what a step returns (``BatchedStep``), and the adapter that puts a
gymnasium vector env behind it (``GymnasiumBatched``).

Every environment autoresets in the same step: a row that terminates or is truncated starts its
next episode at once, its returned observation is the new episode's first, and
``BatchedStep.final_obs`` holds the observation the finished episode ended on (for the other rows,
the returned observation itself), so every row of every step is a transition
``(obs, action, reward, final_obs, terminated)``.

An environment may give the critics more than the actor (asymmetric actor-critic): its
observations end in ``privileged_dim`` numbers that only the critics see (the true state behind
a partial observation, the time left); the actor, its evaluation environment and exports take the
first ``obs_dim``.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np
import torch

from .step import AutoresetMode, transitions


class BatchedStep(NamedTuple):
    """One step of N environments: ``obs [N, obs_dim + privileged_dim]`` (the next episode's
    first where a row ended), ``reward [N]``, ``terminated [N]`` and ``truncated [N]`` (bool),
    ``final_obs`` (as ``obs``: each row's true next observation)."""

    obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor


class BatchedEnv(Protocol):
    """N environments stepped together on ``device``, actions ``[N, act_dim]`` in
    ``[action_low, action_high]`` (tensors ``[act_dim]``), observations ``[N, obs_dim +
    privileged_dim]``."""

    num_envs: int
    obs_dim: int
    act_dim: int
    privileged_dim: int
    action_low: torch.Tensor
    action_high: torch.Tensor
    device: torch.device

    def reset(self, seed: int) -> torch.Tensor:
        """Every row's first observation ``[N, obs_dim + privileged_dim]``, row ``i`` from seed
        ``seed + i``."""

    def step(self, action: torch.Tensor) -> BatchedStep:
        """One step of every row, autoreset in the same step."""


class GymnasiumBatched:
    """A gymnasium vector env (sync or async, ``autoreset_mode`` same-step, Box observations and
    actions) as a ``BatchedEnv``: its numpy arrays become tensors on ``device`` here, the one
    place they cross."""

    privileged_dim = 0

    def __init__(self, envs, device="cpu", dtype=torch.float32):
        mode = envs.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError("GymnasiumBatched takes a vector env made with autoreset_mode "
                             f"SAME_STEP, got {mode}")
        self.envs, self.device, self.dtype = envs, torch.device(device), dtype
        self.num_envs = envs.num_envs
        self.obs_dim = int(np.prod(envs.single_observation_space.shape))
        self.act_dim = int(np.prod(envs.single_action_space.shape))
        self.action_low = self._tensor(envs.single_action_space.low)
        self.action_high = self._tensor(envs.single_action_space.high)

    def _tensor(self, x, dtype=None) -> torch.Tensor:
        return torch.as_tensor(np.asarray(x), dtype=dtype or self.dtype, device=self.device)

    def reset(self, seed: int) -> torch.Tensor:
        obs, _ = self.envs.reset(seed=[seed + i for i in range(self.num_envs)])
        return self._tensor(obs).reshape(self.num_envs, -1)

    def step(self, action: torch.Tensor) -> BatchedStep:
        obs, reward, terminated, truncated, infos = self.envs.step(action.cpu().numpy())
        _, final = transitions(AutoresetMode.SAME_STEP, obs, terminated, truncated, infos, None)
        rows = lambda x: self._tensor(x).reshape(self.num_envs, -1)  # noqa: E731
        return BatchedStep(rows(obs), self._tensor(reward), self._tensor(terminated, torch.bool),
                           self._tensor(truncated, torch.bool), rows(final))

    def close(self) -> None:
        self.envs.close()
