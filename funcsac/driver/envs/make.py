"""Gymnasium environments made for training, evaluation and video."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import gymnasium as gym

AutoresetMode = gym.vector.AutoresetMode


ENV_EXTRAS = {"mujoco": "mujoco", "box2d": "box2d"}


def _make(env_id: str, **kwargs):
    try:
        if "num_envs" in kwargs:
            return gym.make_vec(env_id, **kwargs)
        return gym.make(env_id, **kwargs)
    except gym.error.DependencyNotInstalled as e:
        extra = next((x for k, x in ENV_EXTRAS.items() if k in str(e).lower()), None)
        hint = f"pip install 'funcsac[{extra}]'" if extra else "install what it names"
        raise ValueError(f"cannot create environment {env_id!r}: {e} ({hint})") from e
    except gym.error.Error as e:
        raise ValueError(f"cannot create environment {env_id!r}: {e}") from e


def make_vector_env(env_id: str, num_envs: int, asynchronous: bool = False,
                    mode: str = "same-step"):
    """A vector env; ``mode`` "same-step" resets finished sub-environments within the step
    (``final_obs`` in the infos, no env step spent on resets), "next-step" on the next step."""
    autoreset = AutoresetMode.SAME_STEP if mode == "same-step" else AutoresetMode.NEXT_STEP
    return _make(env_id, num_envs=num_envs, vectorization_mode="async" if asynchronous else "sync",
                 vector_kwargs={"autoreset_mode": autoreset})


def make_eval_env(env_id: str, render_mode: Optional[str] = None):
    """A single environment for evaluation (rendering frames with ``render_mode="rgb_array"``)."""
    return _make(env_id, **({"render_mode": render_mode} if render_mode else {}))


def record_video(env, folder: Path, prefix: str):
    """``env`` recording every episode to ``folder/{prefix}-episode-{i}.mp4`` (gymnasium's
    ``RecordVideo``; needs moviepy)."""
    try:
        import moviepy  # noqa: F401
    except ImportError as e:
        raise ValueError("recording video needs moviepy: pip install 'funcsac[video]'") from e
    return gym.wrappers.RecordVideo(env, str(folder), episode_trigger=lambda i: True,
                                    name_prefix=prefix, disable_logger=True)


