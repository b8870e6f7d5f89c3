"""What the agent needs of an environment's spaces, and actions scaled to its bounds."""
from __future__ import annotations

import dataclasses
from typing import Optional

import gymnasium as gym
import numpy as np
import torch

from .raw import RawObservation


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What the agent needs to know of an environment: sizes and the action bounds. A discrete
    action space of ``act_dim`` actions has ``low == high - act_dim + 1 == [start]``. Image
    observations (``uint8 [C, H, W]``) have their ``image_shape`` and ``obs_dim`` 0; dict
    observations of images and a state vector (``"pixels"``, ``"state"``) also a
    ``state_dim``; vector observations may end in ``privileged_dim`` numbers only the critics
    see (a batched environment's, ``envs.batched``)."""

    obs_dim: int
    act_dim: int
    low: np.ndarray
    high: np.ndarray
    action_dtype: str = "float32"
    discrete: bool = False
    image_shape: tuple = ()
    state_dim: int = 0
    raw: Optional[RawObservation] = None  # how the env's own observations become these
    privileged_dim: int = 0

    @property
    def obs_shape(self):
        """One observation's shape: ``image_shape``, or ``(obs_dim + privileged_dim,)``; a dict
        observation's ``{"pixels": image_shape, "state": (state_dim,)}``."""
        if self.state_dim:
            return {"pixels": self.image_shape, "state": (self.state_dim,)}
        return self.image_shape or (self.obs_dim + self.privileged_dim,)

    @property
    def actor_obs_shape(self):
        """One observation's shape as the actor (evaluation, an exported policy) takes it:
        ``obs_shape`` without the privileged numbers."""
        return self.obs_shape if self.state_dim or self.image_shape else (self.obs_dim,)

    @property
    def policy(self) -> str:
        """The policy family its actions need (``SACConfig.policy``)."""
        return "categorical" if self.discrete else "tanh_gaussian"

    @property
    def action_size(self) -> int:
        """The width of a stored action: ``act_dim``, or 1 (the index) for discrete actions."""
        return 1 if self.discrete else self.act_dim

    def to_dict(self) -> dict:
        """Plain values (JSON-serialisable), as checkpoints keep them."""
        return {"obs_dim": self.obs_dim, "act_dim": self.act_dim, "low": self.low.tolist(),
                "high": self.high.tolist(), "action_dtype": self.action_dtype,
                "discrete": self.discrete, "image_shape": list(self.image_shape),
                "state_dim": self.state_dim, "raw": self.raw and self.raw.to_dict(),
                "privileged_dim": self.privileged_dim}

    @classmethod
    def from_dict(cls, values: dict) -> "EnvSpec":
        return cls(int(values["obs_dim"]), int(values["act_dim"]),
                   np.asarray(values["low"], np.float64), np.asarray(values["high"], np.float64),
                   str(values["action_dtype"]), bool(values.get("discrete", False)),
                   tuple(int(n) for n in values.get("image_shape", ())),
                   int(values.get("state_dim", 0)), RawObservation.from_dict(values.get("raw")),
                   int(values.get("privileged_dim", 0)))


def check_spaces(env_id: str, obs_space, act_space) -> EnvSpec:
    """Raise ``ValueError`` unless actions are a bounded 1-D Box or a Discrete space and
    observations a 1-D Box, ``uint8`` images ``[C, H, W]`` (``--pixels``) or a Dict of such
    images (``"pixels"``) and a 1-D Box (``"state"``), as ``envs.make.observed`` makes them."""
    supported = ("funcsac supports a 1-D Box action space with finite bounds (SAC) or a "
                 "Discrete one (discrete SAC), and a 1-D Box observation space, uint8 "
                 "images of shape [channels, height, width] (--pixels) or a Dict of such images "
                 "and 1-D Boxes")
    images = lambda s: (isinstance(s, gym.spaces.Box) and len(s.shape) == 3  # noqa: E731
                        and s.dtype == np.uint8)
    state = (obs_space.get("state") if isinstance(obs_space, gym.spaces.Dict)
             and set(obs_space.keys()) == {"pixels", "state"} and images(obs_space["pixels"])
             else None)
    if isinstance(state, gym.spaces.Box) and len(state.shape) == 1:
        spec = check_spaces(env_id, obs_space["pixels"], act_space)
        return dataclasses.replace(spec, state_dim=state.shape[0])
    if images(obs_space):
        spec = check_spaces(env_id, gym.spaces.Box(-1.0, 1.0, (1,)), act_space)
        return dataclasses.replace(spec, obs_dim=0, image_shape=tuple(obs_space.shape))
    if isinstance(act_space, gym.spaces.Discrete) and isinstance(obs_space, gym.spaces.Box) \
            and len(obs_space.shape) == 1:
        start = np.array([float(act_space.start)])
        return EnvSpec(obs_space.shape[0], int(act_space.n), start, start + int(act_space.n) - 1,
                       "int64", discrete=True)
    if not isinstance(act_space, (gym.spaces.Box, gym.spaces.Discrete)) \
            or len(act_space.shape or (1,)) != 1:
        raise ValueError(f"{env_id}: unsupported action space {act_space}. {supported}.")
    if isinstance(act_space, gym.spaces.Box) and not (np.all(np.isfinite(act_space.low))
                                                      and np.all(np.isfinite(act_space.high))):
        raise ValueError(f"{env_id}: action space {act_space} has infinite bounds. {supported}.")
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ValueError(f"{env_id}: unsupported observation space {obs_space}. {supported}.")
    return EnvSpec(obs_space.shape[0], act_space.shape[0], act_space.low.astype(np.float64),
                   act_space.high.astype(np.float64), str(act_space.dtype))


# funcsac's extra that installs what a family of environments needs, by gymnasium's name for it

def env_spec(envs, pixels: bool = False) -> EnvSpec:
    """The spec of a vector env made by ``envs.make``; ``raw`` unless its observations are
    rendered frames (``pixels``)."""
    spec = check_spaces(envs.spec.id if envs.spec else "env", envs.single_observation_space,
                        envs.single_action_space)
    raw = None if pixels else RawObservation.from_dict(envs.get_attr("raw_observation")[0])
    return dataclasses.replace(spec, raw=raw)


def scale_action(action, spec: EnvSpec):
    """Policy actions in [-1, 1] to the environment's bounds ``[low, high]``: a numpy array in
    the action space's dtype, or a tensor (of the action's dtype and device) for a tensor. A
    discrete action index ``[..., 1]`` becomes the space's action ``start + index``, ``[...]``."""
    if spec.discrete:
        index = action[..., 0] + spec.low[0]
        return index.long() if isinstance(action, torch.Tensor) else index.astype(np.int64)
    if isinstance(action, torch.Tensor):
        low, high = (torch.as_tensor(b, dtype=action.dtype, device=action.device)
                     for b in (spec.low, spec.high))
    else:
        low, high = spec.low, spec.high
    scaled = low + (action.clip(-1.0, 1.0) + 1.0) * 0.5 * (high - low)
    return scaled if isinstance(action, torch.Tensor) else scaled.astype(spec.action_dtype)


