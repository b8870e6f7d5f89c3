"""Deterministic-policy evaluation on a separate environment."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Optional

import numpy as np
import torch

from ...acting import act
from ...state import SACState
from ..envs.observations import obs_tensors
from ..envs.spec import EnvSpec, scale_action
from ..envs.make import make_eval_env, record_video
from ..envs.step import env_name, step_env


@dataclasses.dataclass(frozen=True)
class EvalResult:
    step: int
    return_mean: float
    return_std: float
    episode_length_mean: float
    agent: int = 0
    episode_length_std: float = 0.0


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
                a = act(state, obs_tensors(obs, cfg))
            obs, reward, terminated, truncated, _ = step_env(
                env, scale_action(a.cpu().numpy(), spec), env_name(env),
                length + 1, f"the evaluation at step {step}, episode {i}, reset seed {seed + i}")
            total += float(reward)
            length += 1
            done = terminated or truncated
        returns.append(total)
        lengths.append(length)
    return EvalResult(step, float(np.mean(returns)), float(np.std(returns)),
                      float(np.mean(lengths)), agent, float(np.std(lengths)))


def evaluate_agent(agent, episodes: int, seed: Optional[int] = None,
                   video_dir: Optional[Path] = None) -> List[EvalResult]:
    """Evaluate each agent of a loaded run (``funcsac.load``) on a new environment: episode i
    starts from ``seed + i`` (default: the seeds of the run's own evaluations, so the figures
    repeat its last eval). With ``video_dir``, every episode is recorded to an MP4 there
    (``agent{i}-episode-{j}.mp4``; needs moviepy, the ``video`` extra)."""
    results = []
    for i in range(len(agent)):
        one = agent[i]
        env = make_eval_env(one.config.env_id, render_mode="rgb_array" if video_dir else None,
                            pixels=one.config.pixel_settings, repeat=one.config.repeat)
        try:
            if video_dir is not None:
                env = record_video(env, Path(video_dir), f"agent{i}")
            results.append(evaluate(one.state, env, one.spec, episodes,
                                    one.eval_seed if seed is None else seed, one.step, agent=i))
        finally:
            env.close()
    return results
