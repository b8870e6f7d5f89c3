"""Batched environments on torch tensors: the torch Pendulum steps as gymnasium's Pendulum-v1, row
by row, in float64; it autoresets in the same step and never goes through numpy; and a gymnasium
vector env behind the same protocol gives its transitions."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from funcsac.driver.envs.batched import GymnasiumBatched
from funcsac.driver.envs.torch_pendulum import EPISODE_STEPS, TorchPendulum, pendulum_step

N = 5


def _gymnasium_rows(seed: int):
    envs = [gym.make("Pendulum-v1") for _ in range(N)]
    obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)])
    return envs, obs


def _state(envs) -> torch.Tensor:
    return torch.tensor(np.stack([e.unwrapped.state for e in envs]), dtype=torch.float64)


def test_each_row_steps_as_gymnasiums_pendulum_in_float64():
    """From gymnasium's first states, with the same float64 torques (some beyond the bounds):
    each step's new state and reward are gymnasium's. numpy's and torch's ``sin``, ``cos`` and
    ``%`` are different implementations, which may differ in the last bit, so each step is taken
    from gymnasium's state (within a few ulps), and a whole episode of the env without resyncing
    gives gymnasium's observations to the rounding carried over 200 steps."""
    envs, obs = _gymnasium_rows(seed=3)
    start = _state(envs)
    free = TorchPendulum(N, dtype=torch.float64)
    free.reset(seed=0)  # the key its next episodes draw from
    first = free.set_state(start[:, 0], start[:, 1])
    torch.testing.assert_close(first.float(), torch.as_tensor(obs), rtol=0, atol=1e-6)
    actions = torch.rand(EPISODE_STEPS, N, 1, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(0)) * 5 - 2.5
    for t in range(EPISODE_STEPS):
        before = _state(envs)
        th, thdot, reward = pendulum_step(before[:, 0], before[:, 1], actions[t, :, 0])
        theirs = [e.step(actions[t, i].numpy()) for i, e in enumerate(envs)]
        torch.testing.assert_close(torch.stack([th, thdot], -1), _state(envs),
                                   rtol=4e-16, atol=4e-16)
        torch.testing.assert_close(reward, torch.tensor([r[1] for r in theirs],
                                                        dtype=torch.float64),
                                   rtol=4e-16, atol=4e-16)
        free_step = free.step(actions[t])
        assert free_step.truncated.tolist() == [r[3] for r in theirs]
        assert not free_step.terminated.any() and not any(r[2] for r in theirs)
        torch.testing.assert_close(free_step.final_obs.float(),
                                   torch.as_tensor(np.stack([r[0] for r in theirs])),
                                   rtol=0, atol=1e-5)
    # the free run's last rows: gymnasium's end of episode, to the rounding carried along
    torch.testing.assert_close(free_step.final_obs, torch.as_tensor(
        np.stack([e.unwrapped._get_obs() for e in envs]), dtype=torch.float64), rtol=0, atol=1e-6)
    assert free_step.truncated.all()


def test_a_row_starts_its_next_episode_in_the_step_its_time_runs_out():
    env = TorchPendulum(3, dtype=torch.float64)
    first = env.reset(seed=1)
    assert first.shape == (3, 3) and (first[:, 2].abs() <= 1).all()
    zero = torch.zeros(3, 1, dtype=torch.float64)
    for _ in range(EPISODE_STEPS - 1):
        step = env.step(zero)
        assert not step.truncated.any()
        torch.testing.assert_close(step.obs, step.final_obs, rtol=0, atol=0)
    last = env.step(zero)
    assert last.truncated.all() and env.t == 0
    assert not torch.equal(last.obs, last.final_obs)  # the new episode's first observation
    th = torch.atan2(last.obs[:, 1], last.obs[:, 0])
    assert (th.abs() <= math.pi).all() and (last.obs[:, 2].abs() <= 1).all()
    # the same seed, the same episodes
    again = TorchPendulum(3, dtype=torch.float64)
    torch.testing.assert_close(again.reset(seed=1), first, rtol=0, atol=0)


def test_the_torch_pendulum_never_goes_through_numpy(monkeypatch):
    """Stepping and autoresetting on tensors: no tensor becomes a numpy array on the way."""
    def refuse(*args, **kwargs):
        raise AssertionError("a tensor went through numpy")

    monkeypatch.setattr(torch.Tensor, "numpy", refuse)
    monkeypatch.setattr(torch.Tensor, "__array__", refuse)
    env = TorchPendulum(64)
    env.reset(seed=0)
    for _ in range(EPISODE_STEPS + 5):
        step = env.step(torch.rand(64, 1) * 4 - 2)
    assert step.obs.dtype == torch.float32 and step.reward.shape == (64,)


def test_bad_actions_and_sizes_are_refused_with_what_was_expected():
    env = TorchPendulum(4)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(torch.zeros(4, 1))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must be \[4, 1\], got \[4\]"):
        env.step(torch.zeros(4))
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        TorchPendulum(0)


def test_a_gymnasium_vector_env_behind_the_protocol_gives_its_transitions():
    """Same-step autoreset: a finished row's ``final_obs`` is the episode's last observation
    (gymnasium's ``infos["final_obs"]``), its ``obs`` the next episode's first."""
    def make():
        return gym.vector.SyncVectorEnv(
            [lambda: gym.make("Pendulum-v1", max_episode_steps=3) for _ in range(2)],
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)

    batched, plain = GymnasiumBatched(make(), dtype=torch.float64), make()
    torch.testing.assert_close(batched.reset(seed=7), torch.as_tensor(
        plain.reset(seed=[7, 8])[0], dtype=torch.float64))
    assert (batched.num_envs, batched.obs_dim, batched.act_dim) == (2, 3, 1)
    for _ in range(3):
        action = torch.full((2, 1), 0.5, dtype=torch.float64)
        step = batched.step(action)
        obs, reward, terminated, truncated, infos = plain.step(action.numpy())
        torch.testing.assert_close(step.obs, torch.as_tensor(obs, dtype=torch.float64))
        torch.testing.assert_close(step.reward, torch.as_tensor(reward, dtype=torch.float64))
        assert step.truncated.tolist() == list(truncated)
    assert step.truncated.all()
    torch.testing.assert_close(step.final_obs, torch.as_tensor(
        np.stack(infos["final_obs"]), dtype=torch.float64))
    with pytest.raises(ValueError, match="autoreset_mode SAME_STEP"):
        GymnasiumBatched(gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1")]))
