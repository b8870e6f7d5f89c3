"""n-step transitions and prioritized replay: against hand computations, through the driver,
vmapped, compiled and across a resume."""
import numpy as np
import optree
import pytest
import torch

import funcsac
from funcsac.driver.replay.buffer import ReplayBuffer, row_shapes
from funcsac.driver.run.checkpoint import load_checkpoint
from funcsac.driver.replay.nstep import NStepQueue
from funcsac.driver.replay.priority import PriorityTree
from funcsac.driver.replay.files import load_buffer
from funcsac.normalize import observe
import toy_envs  # noqa: F401  (registers funcsac-test/Count-v0)
from helpers import (BACKENDS, TINY, assert_states_equal, crash_then_resume, eval_rows, make_batch,
                     reordered, small_config)


def test_nstep_queue_matches_a_hand_table():
    # one env, n = 3: o0..o3 then a termination, a one-step truncated episode, a reset step
    # (not valid), then a two-step truncated episode. Env 1 repeats it with obs + 100.
    steps = [  # (obs, reward, next_obs, terminated, truncated, valid)
        (0, 1, 1, False, False, True), (1, 2, 2, False, False, True),
        (2, 3, 3, False, False, True), (3, 4, 4, True, False, True),
        (5, 5, 6, False, True, True), (6, 0, 0, False, False, False),
        (7, 6, 8, False, False, True), (8, 7, 9, False, True, True)]
    expected_env0 = [  # (obs, rewards, next_obs, terminated, horizon), in emission order
        (0, [1, 2, 3], 3, False, 3),
        (1, [2, 3, 4], 4, True, 3), (2, [3, 4, 0], 4, True, 2), (3, [4, 0, 0], 4, True, 1),
        (5, [5, 0, 0], 6, False, 1),
        (7, [6, 7, 0], 9, False, 2), (8, [7, 0, 0], 9, False, 1)]
    queue = NStepQueue(num_envs=2, n=3, obs_dim=1, act_dim=1)
    got = []
    for obs, r, nxt, term, trunc, valid in steps:
        two = lambda x: np.array([x, x + 100.0])  # noqa: E731
        rows = queue.push(np.array([valid, valid]), two(obs)[:, None], -two(obs)[:, None],
                          np.array([r, r * 10.0]), two(nxt)[:, None], np.array([term, term]),
                          np.array([trunc, trunc]))
        got += [(int(e), rows["obs"][i, 0], list(rows["reward"][i]), rows["next_obs"][i, 0],
                 bool(rows["terminated"][i]), int(rows["horizon"][i]))
                for i, e in enumerate(rows["env"])]
        assert np.array_equal(rows["action"][:, 0], -rows["obs"][:, 0])
    want = [(e, o + 100 * e, [x * (10 if e else 1) for x in rs], n + 100 * e, t, h)
            for step in [expected_env0[0:1], expected_env0[1:4], expected_env0[4:5],
                         expected_env0[5:7]]
            for e in (0, 1) for o, rs, n, t, h in step]
    assert got == want


def _held_rows(run_dir, n_step):
    manifest = load_checkpoint(run_dir / "checkpoint.pt")["buffers"][0]
    buffer = ReplayBuffer(manifest["capacity"], obs_shape=2, act_dim=1, device="cpu", n_step=n_step)
    load_buffer(run_dir, 0, buffer, manifest)
    return buffer, buffer.rows(buffer.oldest, buffer.added)


@pytest.mark.parametrize("mode", ["same-step", "next-step"])
def test_nstep_rows_through_the_driver(tmp_path, mode):
    # Count-v0: 3-step episodes, reward t + 1 at step t; even episodes terminate, odd truncate.
    # Two envs and a 7-row ring, so the held rows come from both envs and the ring wrapped.
    cfg = funcsac.TrainConfig(env_id="funcsac-test/Count-v0", total_steps=40, num_envs=2,
                              learning_starts=1000, autoreset_mode=mode, eval_every=0,
                              buffer_size=7, n_step=2, **{**TINY, "batch_size": 4})
    funcsac.train(cfg, tmp_path)
    buffer, rows = _held_rows(tmp_path, n_step=2)
    assert buffer.added > buffer.capacity and len(rows["obs"]) == 7
    episode, t = rows["obs"][:, 0], rows["obs"][:, 1]
    horizon = torch.clamp(3 - t, max=2)
    assert torch.equal(rows["horizon"], horizon)
    assert torch.equal(rows["next_obs"][:, 0], episode)  # never across an episode boundary
    assert torch.equal(rows["next_obs"][:, 1], t + horizon)
    assert torch.equal(rows["reward"][:, 0], t + 1)
    assert torch.equal(rows["reward"][:, 1], torch.where(horizon == 2, t + 2, 0.0))
    ends = t + horizon == 3
    assert torch.equal(rows["terminated"].bool(), ends & (episode % 2 == 0))
    # sampling sums the rewards with the given gamma and bootstraps with gamma^horizon
    batch, where = buffer.sample(funcsac.keys.make_key(0), 64, torch.tensor(0.5))
    r = buffer.data["reward"][where]
    torch.testing.assert_close(batch.reward, r[:, 0] + 0.5 * r[:, 1])
    assert torch.equal(batch.horizon, buffer.data["horizon"][where])


def test_nstep_target_bootstraps_with_gamma_to_the_horizon():
    cfg = small_config(dtype=torch.float64)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg, terminated_fraction=0.0)
    key = funcsac.keys.make_key(3)
    one = funcsac.td_target(state, batch, key)
    three = funcsac.td_target(state, batch._replace(horizon=torch.full((32,), 3.0,
                                                                       dtype=torch.float64)), key)
    gamma = state.hparams.gamma
    torch.testing.assert_close(three - batch.reward, (one - batch.reward) * gamma ** 2)


def test_update_with_aux_returns_td_errors_vmapped_like_a_loop():
    cfg = small_config(dtype=torch.float64)
    states = [funcsac.init_state(cfg, seed=s) for s in (0, 1)]
    g = torch.Generator().manual_seed(5)
    batches = [make_batch(cfg, seed=s)._replace(
        horizon=torch.randint(1, 4, (32,), generator=g).double(),
        weight=torch.rand(32, generator=g, dtype=torch.float64)) for s in (0, 1)]
    looped = [funcsac.update_with_aux(s, b) for s, b in zip(states, batches)]
    stack = lambda xs: optree.tree_map(lambda *x: torch.stack(x), *xs, namespace="funcsac")  # noqa: E731
    vmapped = torch.func.vmap(funcsac.update_with_aux)(stack(states), stack(batches))
    optree.tree_map(lambda a, b: torch.testing.assert_close(a, b, **reordered()),
                    vmapped, stack(looped), namespace="funcsac")
    # the TD error is the mean over the critics of |Q_i(s, a) - target| before the step
    state, batch = states[0], batches[0]
    k_target, _ = funcsac.keys.split(funcsac.keys.split(state.key, 3)[1], 2)
    q = funcsac.apply_critics(state.static.critic, state.critic, batch.obs, batch.action)
    expected = (q - funcsac.td_target(state, batch, k_target)).abs().mean(0)
    torch.testing.assert_close(looped[0][2]["td_error"], expected)
    # and the state and metrics are those of update (which weighs and bootstraps the same way)
    plain = funcsac.update(state, batch)
    optree.tree_map(torch.testing.assert_close, looped[0][:2], plain, namespace="funcsac")


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_update_with_aux_equals_eager(backend):
    # with n-step horizons, importance weights and normalisation statistics in the state
    torch._dynamo.reset()
    compiled = torch.compile(funcsac.update_with_aux, fullgraph=True, backend=backend)
    cfg = small_config(normalize_obs=True, scale_rewards=True)
    state = funcsac.init_state(cfg, seed=0)
    state = observe(state, torch.randn(40, cfg.obs_dim) * 2, torch.randn(40, dtype=torch.float64),
                    torch.ones(40, dtype=torch.bool))
    eager_state = compiled_state = state
    with torch._dynamo.config.patch(error_on_recompile=True):
        for step in range(3):
            g = torch.Generator().manual_seed(step)
            batch = make_batch(cfg, seed=step)._replace(
                horizon=torch.randint(1, 4, (32,), generator=g).float(),
                weight=torch.rand(32, generator=g))
            eager_state, eager_m, eager_aux = funcsac.update_with_aux(eager_state, batch)
            compiled_state, compiled_m, compiled_aux = compiled(compiled_state, batch)
            optree.tree_map(lambda a, b: torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5),
                            (compiled_state, compiled_m, compiled_aux),
                            (eager_state, eager_m, eager_aux), namespace="funcsac")


def test_prioritized_buffer_draws_by_priority_and_weighs_by_hand():
    buffer = ReplayBuffer(4, obs_shape=1, act_dim=1, device="cpu", priority=(1.0, 0.0))
    buffer.add({k: torch.arange(4.0)[:, None] if k in ("obs", "action", "next_obs")
                else torch.zeros(4) for k in ("obs", "action", "reward", "next_obs", "terminated")})
    # new rows get the largest priority so far (1): uniform
    buffer.set_priorities(torch.tensor([0, 1, 2, 3]), torch.tensor([1.0, 2.0, 3.0, 4.0]))
    batch, where = buffer.sample(funcsac.keys.make_key(0), 20_000, beta=0.5)
    freq = torch.bincount(where, minlength=4).double() / 20_000
    torch.testing.assert_close(freq, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64),
                               atol=0.01, rtol=0)
    # weight (4 * P) ** -0.5 / max: P = 0.1 has the largest, (0.4 ** -0.5)
    expected = (4 * torch.tensor([0.1, 0.2, 0.3, 0.4])) ** -0.5 / 0.4 ** -0.5
    torch.testing.assert_close(batch.weight, expected[where])
    assert buffer.max_priority.item() == 4.0


def test_queued_priority_writes_equal_writes_in_call_order():
    rows = lambda n: {k: torch.zeros(n, *s) for k, s in row_shapes(1, 1).items()}  # noqa: E731
    buffer = ReplayBuffer(6, obs_shape=1, act_dim=1, device="cpu", priority=(0.5, 0.1))
    tree, rng = PriorityTree(6, "cpu"), torch.Generator().manual_seed(0)
    for step in range(5):  # rows arrive, overwrite the ring, and get new priorities in between
        buffer.add(rows(step + 1))
        tree.set(torch.arange(buffer.added - step - 1, buffer.added) % 6,
                 buffer.max_priority.expand(step + 1))
        where = torch.randint(0, buffer.size, (4,), generator=rng)
        td = torch.randn(4, generator=rng)
        buffer.set_priorities(where, td)
        tree.set(where, (td.abs().double() + 0.1) ** 0.5)
    assert buffer.pending  # not yet written
    buffer.sample(funcsac.keys.make_key(0), 3)
    assert not buffer.pending and torch.equal(buffer.tree.leaves, tree.leaves)


def test_nstep_and_prioritized_run_resumes_exactly(tmp_path, monkeypatch):
    cfg = funcsac.TrainConfig(total_steps=900, learning_starts=300, eval_every=300,
                              checkpoint_every=300, seed=4, n_step=3, prioritized=True, **TINY)
    first = funcsac.train(cfg, tmp_path / "a")
    # the checkpoint at 600 is the last before the crash
    resumed = crash_then_resume(cfg, tmp_path / "b", monkeypatch, 900)
    assert eval_rows(tmp_path / "b") == eval_rows(tmp_path / "a")
    assert_states_equal(resumed.state, first.state)
    a, b = (load_checkpoint(tmp_path / d / "checkpoint.pt")["buffers"][0] for d in "ab")
    assert torch.equal(a["priorities"], b["priorities"]) and a["priorities"].std() > 0
    assert torch.equal(a["max_priority"], b["max_priority"])


def test_a_checkpoint_from_before_these_settings_resumes(tmp_path):
    # a run written before n_step, prioritized replay, normalisation and offline data existed:
    # its saved config lacks them, which means they were off
    cfg = funcsac.TrainConfig(total_steps=300, learning_starts=100, eval_every=0, **TINY)
    funcsac.train(cfg, tmp_path)
    payload = load_checkpoint(tmp_path / "checkpoint.pt")
    for key in ("n_step", "prioritized", "priority_alpha", "priority_beta", "priority_epsilon",
                "offline_data", "offline_ratio", "normalize_obs", "scale_rewards"):
        del payload["config"][key]
    torch.save(payload, tmp_path / "checkpoint.pt")
    longer = funcsac.TrainConfig(**{**cfg.to_dict(), "total_steps": 400})
    result = funcsac.train(longer, tmp_path, resume=True)
    assert result.evals[-1].step == 400
