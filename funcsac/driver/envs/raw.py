"""An environment's own observations as funcsac observes them: a ``Dict`` of 1-D and 0-d Boxes
(DeepMind Control's, through shimmy) and at most one ``uint8`` image becomes a vector
(``"state"``), an image, or a dict of both
(``"pixels"``, ``"state"``); images come channels first. The same function serves the
environments a run trains on (``RawObservationEnv``) and a loaded agent given what its
environment returns."""
from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

import gymnasium as gym
import numpy as np


def _image(space) -> bool:
    return isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3


@dataclasses.dataclass(frozen=True)
class RawObservation:
    """How an env's own observation becomes funcsac's: a ``Dict``'s (``is_dict``) 1-D and 0-d
    (``scalars``, each one number) entries ``vectors`` concatenated in this order as ``dtype``,
    and its image entry ``image``, or the
    observation itself when it is an image (``image`` ``""``), moved channels first when
    ``channels_last``. Works on one observation or a batch (leading axes)."""

    is_dict: bool
    image: Optional[str] = None
    channels_last: bool = False
    vectors: Tuple[str, ...] = ()
    dtype: str = "float32"
    scalars: Tuple[str, ...] = ()

    @classmethod
    def of(cls, space) -> Optional["RawObservation"]:
        """The conversion of observations in ``space``, or ``None`` where funcsac takes them as
        they are (a 1-D Box, a channels-first image). ``ValueError`` for a ``Dict`` it cannot
        take."""
        if _image(space):
            return cls(False, "", True) if space.shape[-1] < space.shape[0] else None
        if not isinstance(space, gym.spaces.Dict):
            return None
        images = [k for k, s in space.items() if _image(s)]
        vectors = [k for k, s in space.items() if isinstance(s, gym.spaces.Box)
                   and len(s.shape) <= 1]
        if len(images) > 1 or len(images) + len(vectors) != len(space.spaces) or not space.spaces:
            raise ValueError(f"unsupported Dict observation space {space}: funcsac takes 1-D "
                             "and 0-d Boxes and at most one uint8 image Box ([H, W, C] or "
                             "[C, H, W])")
        dtype = np.result_type(*[space[k].dtype for k in vectors]) if vectors else np.float32
        image = space[images[0]] if images else None
        return cls(True, images[0] if images else None,
                   image is not None and image.shape[-1] < image.shape[0], tuple(vectors),
                   np.dtype(dtype).name, tuple(k for k in vectors if space[k].shape == ()))

    def space(self, space) -> gym.Space:
        """The observation space of the converted observations of ``space``."""
        pixels = None
        if self.image is not None:
            image = space[self.image] if self.is_dict else space
            pixels = (gym.spaces.Box(0, 255, (image.shape[2], *image.shape[:2]), np.uint8)
                      if self.channels_last else image)
        if pixels is not None and not self.vectors:  # an image alone
            return pixels
        state = gym.spaces.Box(*(np.concatenate([np.reshape(getattr(space[k], b), -1)
                                                 for k in self.vectors])
                                 for b in ("low", "high")), dtype=self.dtype)
        return state if pixels is None else gym.spaces.Dict({"pixels": pixels, "state": state})

    def __call__(self, obs):
        """``obs`` (as the env returns it, or a batch of them) as funcsac observes it."""
        def frame(x):
            x = np.asarray(x)
            return np.ascontiguousarray(np.moveaxis(x, -1, -3)) if self.channels_last else x

        if not self.is_dict:
            return frame(obs)
        state = (np.concatenate([self._entry(obs, k) for k in self.vectors], -1)
                 if self.vectors else None)
        if self.image is None:
            return state
        return frame(obs[self.image]) if state is None else {"pixels": frame(obs[self.image]),
                                                             "state": state}

    def _entry(self, obs, key: str) -> np.ndarray:
        """``obs[key]`` as ``dtype``, a scalar entry with an axis of one number added."""
        x = np.asarray(obs[key], self.dtype)
        return x[..., None] if key in self.scalars else x

    def fits(self, obs) -> bool:
        """Whether ``obs`` has this conversion's input layout: a dict of its keys, or (an image)
        an array whose last axis holds the channels."""
        if self.is_dict:
            return isinstance(obs, dict) and set(obs) == {*self.vectors, self.image} - {None}
        return not isinstance(obs, dict) and np.ndim(obs) >= 3

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Optional[dict]) -> Optional["RawObservation"]:
        if not values:
            return None
        return cls(bool(values["is_dict"]), values["image"], bool(values["channels_last"]),
                   tuple(values["vectors"]), str(values["dtype"]),
                   tuple(values.get("scalars", ())))


class RawObservationEnv(gym.ObservationWrapper):
    """``env`` observed through ``RawObservation.of`` its space (as it is where that is
    ``None``), which its vector env tells as plain values through
    ``get_attr("raw_observation")``."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.convert = RawObservation.of(env.observation_space)
        self.raw_observation = self.convert and self.convert.to_dict()
        if self.convert is not None:
            self.observation_space = self.convert.space(env.observation_space)

    def observation(self, observation):
        return observation if self.convert is None else self.convert(observation)
