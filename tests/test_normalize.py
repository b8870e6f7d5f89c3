"""Observation and reward normalisation as leaves of the state: the statistics against numpy,
the update and act against hand-normalised inputs, and per-agent statistics through the driver."""
import numpy as np
import optree
import torch

import funcsac
from funcsac.driver.run.agents import select
from funcsac.driver.run.checkpoint import load_checkpoint
from funcsac.driver.replay.files import load_buffer
from funcsac.driver.replay.buffer import ReplayBuffer
from funcsac.normalize import EPS, init_stats, merge_stats, observe
from helpers import (TINY, assert_states_equal, crash_then_resume, eval_rows, make_batch,
                     small_config)


def test_merged_statistics_equal_numpy_over_all_masked_rows():
    rng = np.random.default_rng(0)
    chunks = [(rng.normal(3.0, 2.0, (n, 4)), rng.random(n) < 0.7) for n in (1, 5, 17, 64)]
    stats = init_stats((4,), "cpu")
    for x, mask in chunks:
        stats = merge_stats(stats, torch.from_numpy(x), torch.from_numpy(mask))
    stats = merge_stats(stats, torch.ones(3, 4), torch.zeros(3, dtype=torch.bool))  # no rows
    rows = np.concatenate([x[m] for x, m in chunks])
    assert stats.count.item() == len(rows)
    torch.testing.assert_close(stats.mean, torch.from_numpy(rows.mean(0)), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(stats.var, torch.from_numpy(rows.var(0)), rtol=1e-12, atol=1e-12)


def test_vmapped_observe_keeps_each_agents_statistics_like_a_loop():
    cfg = small_config(dtype=torch.float64, normalize_obs=True, scale_rewards=True)
    states = [funcsac.init_state(cfg, seed=s) for s in range(3)]
    g = torch.Generator().manual_seed(0)
    scale = torch.arange(1.0, 4.0)[:, None, None]
    obs = torch.randn(3, 8, 5, generator=g, dtype=torch.float64) * scale
    returns = torch.randn(3, 8, generator=g, dtype=torch.float64)
    mask = torch.rand(3, 8, generator=g) < 0.6
    stack = lambda xs: optree.tree_map(lambda *x: torch.stack(x), *xs, namespace="funcsac")  # noqa: E731
    vmapped = torch.func.vmap(observe)(stack(states), obs, returns, mask)
    looped = stack([observe(s, o, r, m) for s, o, r, m in zip(states, obs, returns, mask)])
    optree.tree_map(lambda a, b: torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12),
                    vmapped.norm, looped.norm, namespace="funcsac")
    assert not torch.allclose(vmapped.norm["obs"].var[0], vmapped.norm["obs"].var[2])


def _with_stats(cfg, seed=0):
    """A state keeping statistics, updated with 50 random rows; and its statistics."""
    state = funcsac.init_state(cfg, seed=seed)
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(50, cfg.obs_dim, generator=g, dtype=cfg.dtype) * 3 + 1
    returns = torch.randn(50, generator=g, dtype=torch.float64) * 20
    return observe(state, obs, returns, torch.ones(50, dtype=torch.bool))


def test_update_and_act_see_hand_normalised_inputs():
    cfg = small_config(dtype=torch.float64, normalize_obs=True, scale_rewards=True)
    state = _with_stats(cfg)
    plain = funcsac.init_state(small_config(dtype=torch.float64), seed=0)
    assert not plain.norm and set(state.norm) == {"obs", "return"}
    obs_s, ret_s = state.norm["obs"], state.norm["return"]
    norm = lambda x: ((x - obs_s.mean) / torch.sqrt(obs_s.var + EPS)).clamp(-10, 10)  # noqa: E731
    batch = make_batch(cfg)
    batch = batch._replace(obs=batch.obs * 30)  # some values beyond the clip
    by_hand = batch._replace(obs=norm(batch.obs), next_obs=norm(batch.next_obs),
                             reward=batch.reward / torch.sqrt(ret_s.var + EPS))
    new, metrics = funcsac.update(state, batch)
    expected, expected_metrics = funcsac.update(plain, by_hand)
    optree.tree_map(torch.testing.assert_close, (new.actor, new.critic, metrics),
                    (expected.actor, expected.critic, expected_metrics), namespace="funcsac")
    assert torch.equal(new.norm["obs"].mean, obs_s.mean)  # update leaves the statistics alone
    torch.testing.assert_close(funcsac.act(state, batch.obs), funcsac.act(plain, norm(batch.obs)))


def test_statistics_are_per_agent_through_the_driver_and_resume_exactly(tmp_path, monkeypatch):
    # 4 vmapped agents: 4 separate statistics, each that of its own agent's observations
    cfg = funcsac.TrainConfig(total_steps=300, learning_starts=100, eval_every=150,
                              checkpoint_every=150, num_seeds=4, normalize_obs=True,
                              scale_rewards=True, **TINY)
    first = funcsac.train(cfg, tmp_path / "a")
    stats = first.state.norm["obs"]
    assert stats.mean.shape == (4, 3) and torch.equal(stats.count, torch.full((4,), 300.0,
                                                                              dtype=torch.float64))
    payload = load_checkpoint(tmp_path / "a" / "checkpoint.pt")
    for i in range(4):
        buffer = ReplayBuffer(cfg.buffer_size, 3, 1, "cpu")
        load_buffer(tmp_path / "a", i, buffer, payload["buffers"][i])
        obs = buffer.rows(0, buffer.added)["obs"].double()
        torch.testing.assert_close(stats.mean[i], obs.mean(0))
        torch.testing.assert_close(stats.var[i], obs.var(0, unbiased=False))
        if i:
            assert not torch.allclose(stats.mean[i], stats.mean[0])
    assert (first.state.norm["return"].var > 1.0).all()
    resumed = crash_then_resume(cfg, tmp_path / "b", monkeypatch, 300)
    assert eval_rows(tmp_path / "b") == eval_rows(tmp_path / "a")
    assert_states_equal(resumed.state, first.state)
    # a loaded agent acts with its statistics
    agent = funcsac.load(tmp_path / "a")
    obs = np.zeros((2, 3), np.float32)
    state0 = select(first.state, 0, 4)
    expected = funcsac.act(state0, torch.from_numpy(obs))
    torch.testing.assert_close(torch.as_tensor(agent[0].act(obs)),
                               funcsac.driver.envs.spec.scale_action(expected, agent.spec))
