"""A vector step's real transitions under the autoreset modes, and their finiteness."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

AutoresetMode = gym.vector.AutoresetMode


def autoreset_mode(envs) -> AutoresetMode:
    mode = envs.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        raise ValueError(f"autoreset mode {mode} is not supported; use NEXT_STEP or SAME_STEP")
    return mode


def transitions(mode: AutoresetMode, next_obs: np.ndarray, terminated: np.ndarray,
                truncated: np.ndarray, infos: dict, prev_done: np.ndarray):
    """Which rows of a vector step are real transitions, and their true next observations.

    NEXT_STEP: the step after an episode ends only resets that sub-env (its action is ignored), so
    it is not a transition. SAME_STEP: every row is a transition, but a finished row's returned
    observation already belongs to the next episode; the true one is ``infos["final_obs"]``.
    Returns ``(valid [n] bool, true_next_obs [n, ...])`` (dict observations: dicts of arrays).
    """
    if mode == AutoresetMode.NEXT_STEP:
        return ~prev_done, next_obs
    done = terminated | truncated
    if not done.any():
        return np.ones_like(done), next_obs
    final = infos["final_obs"][done]
    if isinstance(next_obs, dict):
        return np.ones_like(done), {k: _replaced(x, done, [o[k] for o in final])
                                    for k, x in next_obs.items()}
    return np.ones_like(done), _replaced(next_obs, done, final)


def _replaced(x: np.ndarray, rows: np.ndarray, values) -> np.ndarray:
    """A copy of ``x`` with ``x[rows]`` replaced by the stacked ``values``."""
    x = x.copy()
    x[rows] = np.stack(values)
    return x


class EnvError(ValueError):
    """An environment that raised, or returned what funcsac cannot train on: the run stops
    there, its last checkpoint intact."""


def env_name(env) -> str:
    """The id ``env`` was made with (``"env"`` for one made without gymnasium's registry)."""
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else "env"


def step_env(env, action, env_id: str, step: int, seed: str):
    """``env.step(action)`` at env step ``step`` of the run of seed(s) ``seed``; what the env
    raises becomes an ``EnvError`` naming the env, the step and the seed."""
    try:
        return env.step(action)
    except Exception as e:  # any error of the user's env
        raise EnvError(f"{env_id} raised {type(e).__name__} in step at env step {step} ({seed}): "
                       f"{e}; the run stopped there, its last checkpoint intact") from e


def check_finite(env_id: str, step: int, seed: str, **arrays) -> None:
    """Raise ``EnvError`` if any of the named arrays (or dicts of arrays) an env returned at
    env step ``step`` of the run of seed(s) ``seed`` holds NaN or inf."""
    for name, x in arrays.items():
        if not all(np.isfinite(v).all() for v in (x.values() if isinstance(x, dict) else [x])):
            raise non_finite(env_id, step, seed, name)


def non_finite(env_id: str, step: int, seed: str, name: str) -> EnvError:
    """The error for an env's non-finite ``name`` (an observation, a reward) at env step
    ``step`` of the run of seed(s) ``seed``."""
    return EnvError(f"{env_id} returned a non-finite {name} (NaN or inf) at env step {step} "
                    f"({seed}); funcsac trains on finite observations and rewards: fix or wrap "
                    "the environment (the last checkpoint is intact)")
