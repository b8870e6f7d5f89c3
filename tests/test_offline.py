"""Offline data in the driver (RLPD): the split of each batch, offline n-step rows, validation,
exact resume, and that expert data speeds up learning."""
import dataclasses

import numpy as np
import pytest
import torch

import funcsac
from funcsac import keys
from funcsac.driver.cli import _train_config, build_parser, main
from funcsac.driver.run import loop
from funcsac.driver.tools.collect import collect
from funcsac.driver.replay.datasets import (Transitions, load_dataset, save_dataset,
                                             to_policy_actions)
from funcsac.driver.envs.spec import EnvSpec
from funcsac.driver.run.rundir import run_files
from funcsac.driver.presets import preset
from helpers import TINY, assert_states_equal, crash_then_resume, eval_rows

PENDULUM = EnvSpec(3, 1, np.array([-2.0]), np.array([2.0]))


def pendulum_dataset(path, rows=400, reward=1000.0):
    """Random Pendulum-shaped transitions in 200-step truncated episodes, every reward
    ``reward`` (Pendulum's own rewards are <= 0)."""
    rng = np.random.default_rng(0)
    truncated = np.zeros(rows, bool)
    truncated[199::200] = True
    t = Transitions(rng.normal(size=(rows, 3)).astype(np.float32),
                    rng.uniform(-2, 2, size=(rows, 1)).astype(np.float32), np.full(rows, reward),
                    rng.normal(size=(rows, 3)).astype(np.float32), np.zeros(rows, bool), truncated)
    return save_dataset(path, t, "Pendulum-v1")


def new_run(cfg, run_dir):
    """A ``loop.Run`` (its stages called one by one) in a new directory ``run_dir``."""
    run_dir.mkdir()
    return loop.Run(cfg, run_dir, None)


def config(**overrides):
    return funcsac.TrainConfig(**{**TINY, "env_id": "Pendulum-v1", "total_steps": 100,
                                  "eval_every": 0, "checkpoint_every": 0, **overrides})


@pytest.mark.parametrize("utd, num_seeds", [(1, 1), (3, 2)])
def test_each_batch_holds_its_offline_rows_first_then_online_ones(tmp_path, utd, num_seeds):
    data = pendulum_dataset(tmp_path / "data")
    # round(10 * 0.37) = 4 offline rows and 6 online ones in each batch
    cfg = config(batch_size=10, offline_ratio=0.37, offline_data=str(data), learning_starts=0,
                 utd=utd, num_seeds=num_seeds)
    run = new_run(cfg, tmp_path / "run")
    try:
        for step in range(1, 9):
            run.collect()
            run.learn()
            # learning waits for the online buffer to hold its 6 rows of a batch
            assert run.progress.updates == max(0, step - 5) * utd
        key = torch.stack([keys.make_key(i) for i in range(num_seeds)])
        batch, positions = run.learner.sample(run.state, key, utd)
    finally:
        run.close()
    assert batch.obs.shape == (num_seeds,) * (num_seeds > 1) + (utd,) * (utd > 1) + (10, 3)
    reward = batch.reward.reshape(num_seeds, utd, 10)
    assert (reward[..., :4] == 1000).all() and (reward[..., 4:] <= 0).all()
    # offline rows are dataset rows (actions in policy units), the others the agent's own rows
    obs, action = (x.reshape(num_seeds, utd, 10, -1) for x in (batch.obs, batch.action))
    dataset = load_dataset(data, PENDULUM)
    policy_action = {tuple(o.tolist()): a.tolist()
                     for o, a in zip(dataset.obs, to_policy_actions(dataset.action, PENDULUM))}
    assert all(policy_action[tuple(o.tolist())] == a.tolist()
               for o, a in zip(obs[..., :4, :].reshape(-1, 3), action[..., :4, :].reshape(-1, 1)))
    for i, (buffer, where) in enumerate(zip(run.buffers, positions)):
        assert where.shape == (utd * 6,)
        assert torch.equal(obs[i, :, 4:].reshape(-1, 3), buffer.data["obs"][where])
    # different draws in each gradient step and for each agent
    assert len({tuple(o.flatten().tolist()) for o in obs.reshape(-1, 10, 3)}) == num_seeds * utd


def test_offline_n_step_rows_end_at_the_datasets_episode_ends(tmp_path):
    # two 3-step episodes: the first terminates, the second is truncated
    obs = np.array([0, 1, 2, 10, 11, 12], np.float32)
    t = Transitions(np.stack([obs, obs, obs], 1), np.array([[-2], [0], [2], [1], [-1], [0.5]]),
                    np.array([1.0, 2, 3, 4, 5, 6]), np.stack([obs + 1, obs, obs], 1),
                    np.array([0, 0, 1, 0, 0, 0], bool), np.array([0, 0, 0, 0, 0, 1], bool))
    data = save_dataset(tmp_path / "data", t, "Pendulum-v1")
    expected = [  # (obs, action in policy units, rewards, next_obs, terminated, horizon)
        (0, -1.0, [1, 2], 2, 0, 2), (1, 0.0, [2, 3], 3, 1, 2), (2, 1.0, [3, 0], 3, 1, 1),
        (10, 0.5, [4, 5], 12, 0, 2), (11, -0.5, [5, 6], 13, 0, 2), (12, 0.25, [6, 0], 13, 0, 1)]
    for n_step in (2, 1):
        run = new_run(config(offline_data=str(data), n_step=n_step), tmp_path / f"n{n_step}")
        run.close()
        offline = run.offline
        assert offline.capacity == offline.size == 6
        rows = offline.rows(0, 6)
        if n_step == 1:  # the dataset's rows as they are
            assert rows["obs"][:, 0].tolist() == obs.tolist()
            assert rows["next_obs"][:, 0].tolist() == (obs + 1).tolist()
            assert rows["reward"].tolist() == [1, 2, 3, 4, 5, 6]
            assert rows["terminated"].tolist() == [0, 0, 1, 0, 0, 0]
            continue
        got = [(o, a, r, n, d, h) for o, a, r, n, d, h in zip(
            rows["obs"][:, 0].tolist(), rows["action"][:, 0].tolist(), rows["reward"].tolist(),
            rows["next_obs"][:, 0].tolist(), rows["terminated"].tolist(),
            rows["horizon"].tolist())]
        assert got == expected


def test_offline_settings_are_checked_before_anything_is_written(tmp_path, capsys):
    data = pendulum_dataset(tmp_path / "data")
    for ratio in (0, 1, 1.5, -0.1, float("nan"), True, "0.5"):
        with pytest.raises(ValueError, match=r"offline_ratio must be a number in \(0, 1\)"):
            config(offline_ratio=ratio)
    with pytest.raises(ValueError, match="prioritized replay applies to online data only"):
        config(offline_data=str(data), prioritized=True)
    config(prioritized=True)  # without offline data the ratio is not used
    for batch_size, ratio, offline in ((1, 0.5, 0), (32, 0.99, 32)):
        with pytest.raises(ValueError, match=f"gives {offline} offline rows per batch"):
            config(offline_data=str(data), batch_size=batch_size, offline_ratio=ratio)
    with pytest.raises(ValueError, match="offline_data must be a string"):
        config(offline_data=5)
    # a missing dataset, or one of another environment, fails the run at its start
    missing = tmp_path / "missing.npz"
    with pytest.raises(ValueError, match=f"{missing} does not exist"):
        funcsac.train(config(offline_data=str(missing)), tmp_path / "run")
    assert run_files(tmp_path / "run") == []
    other = save_dataset(tmp_path / "other", Transitions(
        np.zeros((5, 2)), np.zeros((5, 1)), np.zeros(5), np.zeros((5, 2)), np.zeros(5, bool),
        np.zeros(5, bool)), "Other-v0")
    with pytest.raises(ValueError, match="observations have 2 values per row but the env"):
        funcsac.train(config(offline_data=str(other)), tmp_path / "run")
    assert main(["train", "--run-dir", str(tmp_path / "cli"), "--offline-data", str(missing),
                 "--no-progress"]) == 2
    assert f"{missing} does not exist" in capsys.readouterr().err
    assert run_files(tmp_path / "cli") == []


def test_offline_data_of_another_environment_is_refused_unless_allowed(tmp_path, capsys):
    # Pendulum-shaped transitions (3 observations, 1 action in [-2, 2]) of another env id
    data = pendulum_dataset(tmp_path / "data")
    t = load_dataset(data)
    other = save_dataset(tmp_path / "other", t, "funcsac-test/OtherPendulum-v0")
    args = ["train", "--run-dir", str(tmp_path / "run"), "--offline-data", str(other),
            "--total-steps", "10", "--eval-episodes", "1", "--no-progress"]
    assert main(args) == 2
    assert (f"{other} was recorded on funcsac-test/OtherPendulum-v0, not on this run's "
            "environment Pendulum-v1; to learn from it anyway, give --offline-any-env"
            in capsys.readouterr().err)
    assert run_files(tmp_path / "run") == []
    assert main(args + ["--offline-any-env"]) == 0
    run = new_run(config(offline_data=str(data)), tmp_path / "same")  # its own env: accepted
    run.close()
    assert run.offline.size == len(t.obs)


def test_the_rlpd_preset_takes_the_data_from_the_command_line(tmp_path, monkeypatch):
    assert "offline_data" not in preset("rlpd")
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["train", "--run-dir", "x", "--preset", "rlpd",
                                      "--offline-data", "expert.npz", "--offline-ratio", "0.25"])
    cfg = _train_config(args)
    # the path is made absolute, so a resumed run (or a Tune trial) elsewhere finds it
    assert (cfg.offline_data, cfg.offline_ratio, cfg.utd, cfg.num_critics) == (
        str(tmp_path / "expert.npz"), 0.25, 20, 10)
    assert cfg.options["critic_layer_norm"] and cfg.actor_q_reduction == "mean"


@pytest.mark.parametrize("command", [["train", "--run-dir", "run"], ["tune", "--storage", "s"]])
def test_the_rlpd_preset_without_offline_data_is_refused(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    for module, name in ((funcsac.driver, "train"), (funcsac.driver.tools.tune, "run_tune")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("a run started"))
    assert main(command + ["--preset", "rlpd", "--no-progress"]) == 2
    assert capsys.readouterr().err == (
        "funcsac: error: --preset rlpd needs --offline-data PATH (a .npz from `funcsac collect` "
        "or a Minari dataset)\n")
    assert list(tmp_path.iterdir()) == []


def test_resume_with_offline_data_is_exact(tmp_path, monkeypatch):
    data = pendulum_dataset(tmp_path / "data", reward=-3.0)
    cfg = config(total_steps=300, learning_starts=100, eval_every=100, checkpoint_every=100,
                 seed=3, n_step=2, offline_data=str(data))
    first = funcsac.train(cfg, tmp_path / "a")
    # crash after the checkpoint at 200
    resumed = crash_then_resume(cfg, tmp_path / "c", monkeypatch, 300)
    assert eval_rows(tmp_path / "c") == eval_rows(tmp_path / "a")
    assert len(eval_rows(tmp_path / "a")) == 4  # header, 100, 200, 300
    assert_states_equal(resumed.state, first.state)
    # the offline rows took part: the same run without them ends elsewhere
    alone = funcsac.train(dataclasses.replace(cfg, offline_data=""), tmp_path / "b")
    assert not all(torch.equal(x, y) for x, y in zip(
        torch.utils._pytree.tree_leaves(alone.state), torch.utils._pytree.tree_leaves(first.state)))


@pytest.fixture
def one_thread():
    """Small networks run faster on one thread, and much faster when the cores are busy."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def rlpd_against_scratch(tmp_path, seed: int):
    """An expert (2,000 steps at UTD 1), 2,000 steps of its data (`collect`), then 4 agents
    (seeds ``seed``..``seed + 3``) trained for 600 env steps at UTD 4 with and without the data.
    Returns the expert's eval return and each run's final eval returns."""
    base = dict(env_id="Pendulum-v1", hidden_sizes=(64, 64), batch_size=128,
                critic_layer_norm=True, init_alpha=0.1, n_step=3, learning_starts=150,
                eval_every=0, eval_episodes=10, checkpoint_every=0, log_every=10_000,
                compile=False, progress=False, seed=seed)
    expert = funcsac.train(funcsac.TrainConfig(**base, total_steps=2000), tmp_path / "expert")
    collect(tmp_path / "expert", 2000, tmp_path / "expert-data", seed=seed)
    returns = {}
    for name, extra in (("scratch", {}),
                        ("rlpd", {"offline_data": str(tmp_path / "expert-data.npz")})):
        cfg = funcsac.TrainConfig(**base, total_steps=600, utd=4, num_seeds=4, **extra)
        result = funcsac.train(cfg, tmp_path / name)
        # both start learning at step 150 (the online buffer then holds a whole batch)
        assert result.state.step.tolist() == [451 * 4] * 4
        returns[name] = np.array([e.return_mean for e in result.evals])
    return expert.evals[-1].return_mean, returns


@pytest.mark.slow
def test_expert_data_speeds_up_learning(tmp_path, one_thread):
    """Offline data help most while the online agent has little of its own: at 600 env steps
    (1,800 gradient steps) RLPD agents mostly swing the pendulum up, agents from scratch mostly
    not yet. Final eval returns seen here (2 cores, one thread; about 95 s a seed):

    | seed | expert | scratch (4 agents), mean | with the expert's data, mean |
    |---|---|---|---|
    | 1 | -125 | -407 -890 -966 -665, -732 | -215 -528 -280 -524, -387 |
    | 10 | -132 | -948 -675 -835 -188, -662 | -369 -175 -202 -195, -235 |
    | 24 | -318 | -319 -179 -1089 -1523, -777 | -186 -210 -136 -202, -183 |
    """
    expert, returns = rlpd_against_scratch(tmp_path, seed=1)
    assert expert > -400, expert  # the data are an expert's
    assert returns["rlpd"].mean() > -500, returns
    assert returns["rlpd"].mean() > returns["scratch"].mean() + 200, returns
