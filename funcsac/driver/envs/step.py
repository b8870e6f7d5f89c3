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


def check_finite(env_id: str, step: int, **arrays) -> None:
    """Raise ``ValueError`` if any of the named arrays (or dicts of arrays) an env returned holds
    NaN or inf."""
    for name, x in arrays.items():
        if not all(np.isfinite(v).all() for v in (x.values() if isinstance(x, dict) else [x])):
            raise ValueError(f"{env_id} returned a non-finite {name} (NaN or inf) at env step "
                             f"{step}; funcsac trains on finite observations and rewards: fix "
                             "or wrap the environment (the last checkpoint is intact)")
