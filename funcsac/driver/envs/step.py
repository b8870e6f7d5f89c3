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
    Returns ``(valid [n] bool, true_next_obs [n, obs_dim])``.
    """
    if mode == AutoresetMode.NEXT_STEP:
        return ~prev_done, next_obs
    done = terminated | truncated
    true_next = next_obs.copy()
    if done.any():
        true_next[done] = np.stack(infos["final_obs"][done])
    return np.ones_like(done), true_next


def check_finite(env_id: str, step: int, **arrays) -> None:
    """Raise ``ValueError`` if any of the named arrays an env returned holds NaN or inf."""
    for name, x in arrays.items():
        if not np.isfinite(x).all():
            raise ValueError(f"{env_id} returned a non-finite {name} (NaN or inf) at env step "
                             f"{step}; funcsac trains on finite observations and rewards: fix "
                             "or wrap the environment (the last checkpoint is intact)")
