"""Rolling out a trained agent to record an offline dataset."""
from __future__ import annotations

from pathlib import Path
from typing import Union

import numpy as np
import torch

from ... import keys
from ...acting import act
from ..replay.datasets import Transitions, npz_path, save_dataset
from ..envs.step import check_finite, step_env
from ..envs.make import make_eval_env
from ..envs.spec import scale_action
from ..run.status import LOGGER, showing_status
from .load import load


def collect(run_dir: Union[str, Path], steps: int, out: Union[str, Path], noise: float = 0.0,
            seed: int = 0, agent_index: int = 0, deterministic: bool = False) -> Transitions:
    """``steps`` environment steps of agent ``agent_index`` of the run in ``run_dir`` on a new
    environment of the run's env id, saved to ``out`` (``.npz`` appended if missing) and returned.

    Episode i resets with seed ``seed + i``. Actions are policy samples (the mean action when
    ``deterministic``) drawn with keys from ``keys.make_key(seed)``, plus Gaussian noise of std
    ``noise`` in policy units [-1, 1], clipped there and scaled to the environment's bounds. The
    last row is marked truncated unless its episode terminated there.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if not noise >= 0.0:
        raise ValueError(f"noise must be a standard deviation >= 0, got {noise}")
    path = npz_path(out)
    agent = load(run_dir)
    if not -len(agent) <= agent_index < len(agent):
        raise ValueError(f"agent index {agent_index} out of range: the run has {len(agent)} "
                         "agent(s)")
    agent = agent[agent_index]
    if agent.spec.discrete:
        raise ValueError("funcsac collect writes datasets of continuous actions; this run's "
                         f"environment {agent.config.env_id} has discrete actions")
    if agent.spec.image_shape:
        raise ValueError("funcsac collect writes datasets of vector observations; this run "
                         f"observes images of shape {list(agent.spec.image_shape)}")
    env_id, state = agent.config.env_id, agent.state
    rows = {field: [] for field in Transitions._fields}
    returns, episode_return, key = [], 0.0, keys.make_key(seed)
    env = make_eval_env(env_id, repeat=agent.config.repeat)
    try:
        obs, _ = env.reset(seed=seed)
        for step in range(steps):
            key, act_key, noise_key = keys.split(key, 3)
            with torch.no_grad():
                policy = act(state, torch.as_tensor(obs, dtype=state.config.dtype),
                             deterministic, None if deterministic else act_key).numpy()
            if noise > 0.0:
                policy = policy + noise * keys.normal(noise_key, policy.shape).numpy()
            action = scale_action(policy, agent.spec)
            where = f"reset seed {seed + len(returns)}"
            next_obs, reward, terminated, truncated, _ = step_env(env, action, env_id, step,
                                                                  where)
            check_finite(env_id, step, where, observation=next_obs, reward=reward)
            for field, x in zip(Transitions._fields,
                                (obs, action, reward, next_obs, terminated, truncated)):
                rows[field].append(x)
            episode_return += float(reward)
            obs = next_obs
            if terminated or truncated:
                returns.append(episode_return)
                episode_return = 0.0
                obs, _ = env.reset(seed=seed + len(returns))
    finally:
        env.close()
    transitions = Transitions(*(np.array(x) for x in rows.values()))
    transitions.truncated[-1] |= not transitions.terminated[-1]
    save_dataset(path, transitions, env_id)
    ends = int((transitions.terminated | transitions.truncated).sum())
    mean = f"mean return {np.mean(returns):.2f} of the {len(returns)} finished" if returns else (
        "none finished")
    with showing_status():
        LOGGER.info(f"collected {steps} steps in {ends} episode(s) ({mean}) with agent "
                    f"{agent_index} of {run_dir}; wrote {path}")
    return transitions
