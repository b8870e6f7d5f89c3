"""Deterministic-policy evaluation on a separate environment."""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ..act import act
from ..state import SACState
from .envs import EnvSpec, scale_action


@dataclasses.dataclass(frozen=True)
class EvalResult:
    step: int
    return_mean: float
    return_std: float
    episode_length_mean: float
    agent: int = 0


def evaluate(state: SACState, env, spec: EnvSpec, episodes: int, seed: int, step: int,
             agent: int = 0) -> EvalResult:
    """Run ``episodes`` episodes with ``tanh(mean)`` actions; episode i starts from ``seed + i``, so
    every evaluation sees the same start states."""
    cfg = state.config
    returns, lengths = [], []
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        done, total, length = False, 0.0, 0
        while not done:
            with torch.no_grad():
                a = act(state, torch.as_tensor(obs, dtype=cfg.dtype, device=cfg.device))
            obs, reward, terminated, truncated, _ = env.step(
                scale_action(a.cpu().numpy(), spec).astype(env.action_space.dtype))
            total += float(reward)
            length += 1
            done = terminated or truncated
        returns.append(total)
        lengths.append(length)
    return EvalResult(step, float(np.mean(returns)), float(np.std(returns)),
                      float(np.mean(lengths)), agent)
