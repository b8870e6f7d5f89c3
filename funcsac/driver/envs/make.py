"""Gymnasium environments made for training, evaluation and video."""
from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path
from typing import Optional

import gymnasium as gym
import numpy as np
import torch

from .dmc import FoldedSeed, is_dmc, register_dmc, render_kwargs
from .raw import RawObservationEnv
from .torch_pendulum import TimedPendulum, TorchPendulum
from .warp_half_cheetah import WarpHalfCheetah

AutoresetMode = gym.vector.AutoresetMode


ENV_EXTRAS = {"mujoco": "mujoco", "box2d": "box2d", "dm_control": "dmc", "pygame": "pixels"}


@dataclasses.dataclass(frozen=True)
class Pixels:
    """Observations made of rendered frames: each ``size x size`` RGB, the last ``frames`` of
    them stacked along the channels, ``uint8 [3 * frames, size, size]``; with ``state``, dicts of
    those frames (``"pixels"``) and the env's own observation (``"state"``)."""

    size: int = 84
    frames: int = 3
    state: bool = False


class ActionRepeat(gym.Wrapper):
    """Each action applied ``repeat`` times in a row, as DrQ's action repeat: the rewards summed,
    the last observation returned, stopping early where the episode ends (a time limit counts
    the inner env's steps)."""

    def __init__(self, env: gym.Env, repeat: int):
        super().__init__(env)
        self.repeat = repeat

    def step(self, action):
        total = 0.0
        for _ in range(self.repeat):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        return obs, total, terminated, truncated, info


def _resized(frame: np.ndarray, size: int) -> np.ndarray:
    """An ``[H, W, 3]`` frame averaged down (or up) to ``[size, size, 3]``."""
    if frame.shape[:2] == (size, size):
        return frame
    x = torch.from_numpy(np.ascontiguousarray(frame)).permute(2, 0, 1)[None].float()
    x = torch.nn.functional.interpolate(x, size=(size, size), mode="area")
    return x[0].permute(1, 2, 0).round().clamp(0, 255).to(torch.uint8).numpy()


def _on_pixels(env: gym.Env, fn, space: gym.spaces.Box) -> gym.Env:
    """``env`` with ``fn`` applied to its frames (its observation, or a dict's ``"pixels"``),
    which then lie in ``space``."""
    obs_space = env.observation_space
    if isinstance(obs_space, gym.spaces.Dict):
        return gym.wrappers.TransformObservation(
            env, lambda o: {**o, "pixels": fn(o["pixels"])},
            gym.spaces.Dict({**obs_space.spaces, "pixels": space}))
    return gym.wrappers.TransformObservation(env, fn, space)


def pixel_env(env: gym.Env, pixels: Pixels) -> gym.Env:
    """``env`` (made with ``render_mode="rgb_array"``) observed through its frames
    (``Pixels``); gymnasium's ``AddRenderObservation`` and ``FrameStackObservation`` (the first
    frame repeated at a reset; of a dict, the latest ``"state"`` is kept)."""
    size, frames = pixels.size, pixels.frames
    if pixels.state and not isinstance(env.observation_space, gym.spaces.Box):
        raise ValueError(f"frames with the env's state need a Box observation space, got "
                         f"{env.observation_space}")
    env = gym.wrappers.AddRenderObservation(env, render_only=not pixels.state)
    env = _on_pixels(env, lambda f: _resized(f, size),
                     gym.spaces.Box(0, 255, (size, size, 3), np.uint8))
    env = gym.wrappers.FrameStackObservation(env, frames)
    if pixels.state:  # the stacked states: the latest one
        stacked = env.observation_space
        env = gym.wrappers.TransformObservation(
            env, lambda o: {**o, "state": o["state"][-1]},
            gym.spaces.Dict({**stacked.spaces, "state": _latest(stacked["state"])}))
    channels_first = gym.spaces.Box(0, 255, (3 * frames, size, size), np.uint8)
    return _on_pixels(env, lambda x: np.ascontiguousarray(x.transpose(0, 3, 1, 2)).reshape(
        3 * frames, size, size), channels_first)


def _latest(stacked: gym.spaces.Box) -> gym.spaces.Box:
    """One entry of a ``FrameStackObservation``'s stacked Box."""
    return gym.spaces.Box(stacked.low[-1], stacked.high[-1], dtype=stacked.dtype)


def observed(env: gym.Env, pixels: Optional[Pixels] = None, repeat: int = 1) -> gym.Env:
    """``env`` as funcsac observes it: a ``Dict`` observation space as dict observations and
    channels-last images channels first (``RawObservation``), each action applied ``repeat``
    times (``ActionRepeat``), then through its frames (``pixel_env``, rendered after the repeated
    steps) with ``pixels``."""
    env = RawObservationEnv(FoldedSeed(env) if is_dmc(getattr(env.spec, "id", "")) else env)
    if repeat > 1:
        env = ActionRepeat(env, repeat)
    return env if pixels is None else pixel_env(env, pixels)


def _render_kwargs(env_id: str, pixels: Pixels) -> dict:
    """``gym.make``'s arguments for rendering frames: MuJoCo envs render at the frame size
    (headless, through EGL unless ``MUJOCO_GL`` says otherwise)."""
    if is_dmc(env_id):
        return render_kwargs(env_id, pixels.size)
    kwargs = {"render_mode": "rgb_array"}
    entry_point = str(gym.spec(env_id).entry_point)
    if "classic_control" in entry_point and importlib.util.find_spec("pygame") is None:
        raise gym.error.DependencyNotInstalled(  # said at the start, not at the first frame
            f"{env_id} renders its frames with pygame, which is not installed")
    if "mujoco" in entry_point:
        os.environ.setdefault("MUJOCO_GL", "egl")
        kwargs.update(width=pixels.size, height=pixels.size)
    return kwargs


# environments with an implementation that steps N rows at once on tensors (``envs.batched``),
# by the id a run names: its factory ``(num_envs, device, dtype) -> BatchedEnv`` and the
# gymnasium environment each of its rows is (what evaluation, specs and loading make)
BATCHED_ENVS = {"torch/Pendulum-v1": (TorchPendulum, "Pendulum-v1"),
                "torch/Pendulum-v1-timed": (TimedPendulum, "Pendulum-v1"),
                "warp/HalfCheetah-v5": (WarpHalfCheetah, "HalfCheetah-v5")}


def gymnasium_id(env_id: str) -> str:
    """The gymnasium id of the environment ``env_id`` names (itself, or a batched one's twin)."""
    return BATCHED_ENVS[env_id][1] if env_id in BATCHED_ENVS else env_id


def make_batched_env(env_id: str, num_envs: int, device, dtype: torch.dtype):
    """``num_envs`` rows of the batched environment ``env_id`` (``BATCHED_ENVS``) on ``device``."""
    return BATCHED_ENVS[env_id][0](num_envs, device, dtype)


def _make(env_id: str, pixels: Optional[Pixels] = None, repeat: int = 1, **kwargs):
    env_id = gymnasium_id(env_id)
    register_dmc(env_id)
    try:
        if pixels is not None:
            kwargs.update(_render_kwargs(env_id, pixels))
        if "num_envs" in kwargs:
            return gym.make_vec(env_id, wrappers=[lambda env: observed(env, pixels, repeat)],
                                **kwargs)
        return observed(gym.make(env_id, **kwargs), pixels, repeat)
    except gym.error.DependencyNotInstalled as e:
        extra = next((x for k, x in ENV_EXTRAS.items() if k in str(e).lower()), None)
        hint = f"pip install 'funcsac[{extra}]'" if extra else "install what it names"
        raise ValueError(f"cannot create environment {env_id!r}: {e} ({hint})") from e
    except gym.error.Error as e:
        raise ValueError(f"cannot create environment {env_id!r}: {e}") from e
    except ModuleNotFoundError as e:  # the module of a "module:Env-v0" id, or one it imports
        if ":" not in env_id:
            raise
        raise ValueError(f"cannot create environment {env_id!r}: its module "
                         f"{env_id.partition(':')[0]!r} (or a module it imports) is not "
                         f"importable here ({e}); put it on the Python path (PYTHONPATH) or "
                         "install it") from e


def make_vector_env(env_id: str, num_envs: int, asynchronous: bool = False,
                    mode: str = "same-step", pixels: Optional[Pixels] = None, repeat: int = 1):
    """A vector env; ``mode`` "same-step" resets finished sub-environments within the step
    (``final_obs`` in the infos, no env step spent on resets), "next-step" on the next step;
    each observed as ``observed`` says (through rendered frames with ``pixels``, each action
    ``repeat`` times)."""
    autoreset = AutoresetMode.SAME_STEP if mode == "same-step" else AutoresetMode.NEXT_STEP
    return _make(env_id, pixels, repeat, num_envs=num_envs,
                 vectorization_mode="async" if asynchronous else "sync",
                 vector_kwargs={"autoreset_mode": autoreset})


def make_eval_env(env_id: str, render_mode: Optional[str] = None,
                  pixels: Optional[Pixels] = None, repeat: int = 1):
    """A single environment for evaluation (rendering frames with ``render_mode="rgb_array"``,
    as one with ``pixels`` always does; each action ``repeat`` times)."""
    kwargs = ({"render_mode": render_mode} if render_mode else {})
    if render_mode == "rgb_array" and is_dmc(env_id) and pixels is None:
        kwargs.update(render_kwargs(env_id, 480))  # video frames
    return _make(env_id, pixels, repeat, **kwargs)


def record_video(env, folder: Path, prefix: str):
    """``env`` recording every episode to ``folder/{prefix}-episode-{i}.mp4`` (gymnasium's
    ``RecordVideo``; needs moviepy)."""
    try:
        import moviepy  # noqa: F401
    except ImportError as e:
        raise ValueError("recording video needs moviepy: pip install 'funcsac[video]'") from e
    return gym.wrappers.RecordVideo(env, str(folder), episode_trigger=lambda i: True,
                                    name_prefix=prefix, disable_logger=True)


