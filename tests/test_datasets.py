"""Offline datasets: funcsac's .npz files, local Minari datasets, their checks, and `collect`."""
import logging
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import funcsac
from funcsac.driver.cli import main
from funcsac.driver.tools.collect import collect
from funcsac.driver.replay.datasets import (Transitions, load_dataset, save_dataset,
                                     to_policy_actions)
from funcsac.driver.envs.spec import EnvSpec, scale_action
from helpers import TINY, reordered

PENDULUM = EnvSpec(3, 1, np.array([-2.0]), np.array([2.0]))
RUN = funcsac.TrainConfig(env_id="Pendulum-v1", total_steps=300, learning_starts=200,
                          eval_every=0, checkpoint_every=0, seed=3, **TINY)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    funcsac.train(RUN, run_dir)
    return run_dir


def random_transitions(rows=10, seed=0) -> Transitions:
    """Pendulum-shaped rows: episodes ending at rows 3 (terminated) and 6 (truncated); the last
    episode is unfinished."""
    rng = np.random.default_rng(seed)
    terminated, truncated = np.zeros(rows, bool), np.zeros(rows, bool)
    terminated[3] = truncated[6] = True
    return Transitions(rng.normal(size=(rows, 3)).astype(np.float32),
                       rng.uniform(-2, 2, size=(rows, 1)).astype(np.float32),
                       rng.normal(size=rows), rng.normal(size=(rows, 3)).astype(np.float32),
                       terminated, truncated)


def test_save_load_round_trip_is_exact_and_ends_the_last_episode(tmp_path):
    t = random_transitions()
    path = save_dataset(tmp_path / "data", t, "Pendulum-v1")
    assert path == tmp_path / "data.npz"
    loaded = load_dataset(path, PENDULUM)
    # the unfinished last episode is ended (truncated); everything else is as saved
    assert np.flatnonzero(loaded.truncated).tolist() == [6, 9]
    assert all(x.dtype == y.dtype and np.array_equal(x, y)
               for x, y in zip(t._replace(truncated=loaded.truncated), loaded))
    save_dataset(tmp_path / "again.npz", loaded, "Pendulum-v1")
    assert (tmp_path / "data.npz").read_bytes() == (tmp_path / "again.npz").read_bytes()


def test_to_policy_actions_inverts_scale_action():
    spec = EnvSpec(3, 3, np.array([-2.0, 0.0, -1.0]), np.array([2.0, 5.0, 3.0]))
    a = np.random.default_rng(1).uniform(-1, 1, size=(100, 3)).astype(np.float32)
    a[:2] = [[-1, 1, 0], [1, -1, 0]]
    back = to_policy_actions(scale_action(a, spec), spec)
    assert back.dtype == np.float32
    np.testing.assert_allclose(back, a, rtol=0, atol=1e-6)
    assert np.array_equal(to_policy_actions(np.array([[-3.0, 6.0, 3.0]]), spec), [[-1, 1, 1]])


def _minari_dataset(minari, dataset_id, env, lengths):
    """A local Minari dataset of random-action episodes of ``env`` (made from episode buffers:
    minari's DataCollector needs jax); returns the steps as ``Transitions``."""
    from minari.data_collector.episode_buffer import EpisodeBuffer
    steps, episodes = {field: [] for field in Transitions._fields}, []
    for episode, length in enumerate(lengths):
        obs, _ = env.reset(seed=episode)
        env.action_space.seed(episode)
        record = {k: [] for k in ("obs", "action", "reward", "terminated", "truncated")}
        record["obs"].append(obs)
        for _ in range(length):
            action = env.action_space.sample()
            next_obs, reward, terminated, truncated, _ = env.step(action)
            for field, x in zip(Transitions._fields,
                                (obs, action, reward, next_obs, terminated, truncated)):
                steps[field].append(x)
            for k, x in zip(record, (next_obs, action, reward, terminated, truncated)):
                record[k].append(x)
            obs = next_obs
        stacked = {k: ({n: np.stack([o[n] for o in v]) for n in v[0]} if isinstance(v[0], dict)
                       else np.array(v)) for k, v in record.items()}
        episodes.append(EpisodeBuffer(id=episode, seed=episode, observations=stacked["obs"],
                                      actions=stacked["action"], rewards=stacked["reward"],
                                      terminations=stacked["terminated"],
                                      truncations=stacked["truncated"], infos={}))
    minari.create_dataset_from_buffers(dataset_id, episodes, env=env, ref_min_score=-1000.0,
                                       ref_max_score=0.0)
    return Transitions(*(np.array(x) if not isinstance(x[0], dict) else None
                         for x in steps.values()))


# minari asks for an author, a description... and a serialisable env spec
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_local_minari_dataset_loads_as_its_episodes(tmp_path, monkeypatch):
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    env = gym.make("Pendulum-v1", max_episode_steps=20)
    # the last episode is left unfinished
    expected = _minari_dataset(minari, "funcsac/pendulum-random-v0", env, (20, 20, 7))
    env.close()
    assert np.flatnonzero(expected.truncated).tolist() == [19, 39]
    for path in (tmp_path / "funcsac" / "pendulum-random-v0",
                 tmp_path / "funcsac" / "pendulum-random-v0" / "data"):
        loaded = load_dataset(path, PENDULUM)
        for field, x, y in zip(Transitions._fields, expected, loaded):
            if field != "truncated":
                assert np.array_equal(x, y), field
        assert np.flatnonzero(loaded.truncated).tolist() == [19, 39, 46]
        assert not loaded.terminated.any() and loaded.action.dtype == np.float32
    # the env id in its metadata is checked against the run's
    load_dataset(path, PENDULUM, env_id="Pendulum-v1")
    with pytest.raises(ValueError, match=f"{path} was recorded on Pendulum-v1, not on this "
                                         "run's environment Other-v0"):
        load_dataset(path, PENDULUM, env_id="Other-v0")


def test_each_bad_dataset_is_refused_with_what_is_wrong(tmp_path, monkeypatch):
    t = random_transitions()

    def refused(transitions, match, spec=PENDULUM):
        path = save_dataset(tmp_path / "bad.npz", transitions, "Pendulum-v1")
        with pytest.raises(ValueError, match=match):
            load_dataset(path, spec)

    refused(t, r"observations have 3 values per row .* have 4",
            EnvSpec(4, 1, PENDULUM.low, PENDULUM.high))
    refused(t, r"actions have 1 values per row .* have 2",
            EnvSpec(3, 2, np.array([-2.0, -2.0]), np.array([2.0, 2.0])))
    action = t.action.copy()
    action[5] = 2.00002  # beyond the bound by less than the tolerance (1e-5 of the range)
    path = save_dataset(tmp_path / "edge.npz", t._replace(action=action), "Pendulum-v1")
    assert load_dataset(path, PENDULUM).action[5] == action[5]
    action[5] = -2.001
    refused(t._replace(action=action), r"actions outside the environment's bounds \(first at "
            r"row 5")
    obs = t.obs.copy()
    obs[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"obs holds NaN or inf \(first at row 4\)"):
        save_dataset(tmp_path / "nan.npz", t._replace(obs=obs), "Pendulum-v1")
    with pytest.raises(ValueError, match="reward holds NaN or inf"):
        save_dataset(tmp_path / "inf.npz", t._replace(reward=np.full(10, np.inf)), "Pendulum-v1")
    with pytest.raises(ValueError, match="inconsistent lengths"):
        save_dataset(tmp_path / "short.npz", t._replace(reward=t.reward[:-1]), "Pendulum-v1")
    with pytest.raises(ValueError, match="holds no transitions"):
        save_dataset(tmp_path / "empty.npz", Transitions(*(x[:0] for x in t)), "Pendulum-v1")
    with pytest.raises(ValueError, match="does not exist"):
        load_dataset(tmp_path / "missing.npz")
    (tmp_path / "notes.txt").write_text("not a dataset")
    np.savez(tmp_path / "other.npz", obs=t.obs)
    for path in (tmp_path / "notes.txt", tmp_path / "other.npz"):
        with pytest.raises(ValueError, match="unknown format"):
            load_dataset(path)
    with pytest.raises(ValueError, match="without data/metadata.json"):
        load_dataset(tmp_path)
    (tmp_path / "minari" / "data").mkdir(parents=True)
    (tmp_path / "minari" / "data" / "metadata.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "minari", None)  # import minari fails
    with pytest.raises(ValueError, match=r"needs minari .*pip install 'funcsac\[offline\]'"):
        load_dataset(tmp_path / "minari")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_minari_dataset_of_dict_observations_is_refused(tmp_path, monkeypatch):
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    space = gym.spaces.Dict(pos=gym.spaces.Box(-8.0, 8.0, (3,)))
    env = gym.wrappers.TransformObservation(gym.make("Pendulum-v1", max_episode_steps=5),
                                            lambda obs: {"pos": obs}, space)
    _minari_dataset(minari, "funcsac/pendulum-dict-v0", env, (5,))
    env.close()
    with pytest.raises(ValueError, match=r"observation space Dict\(.*\) is not supported"):
        load_dataset(tmp_path / "funcsac" / "pendulum-dict-v0")


def test_collect_records_episodes_in_bounds_and_repeats_with_its_seed(run_dir, tmp_path,
                                                                      caplog):
    caplog.set_level(logging.INFO, logger="funcsac")
    t = collect(run_dir, 450, tmp_path / "a", noise=0.3, seed=4)
    out = caplog.text
    assert "450 steps in 3 episode(s)" in out and "of the 2 finished" in out
    loaded = load_dataset(tmp_path / "a.npz", PENDULUM)
    assert all(np.array_equal(x, y) for x, y in zip(t, loaded)) and len(loaded.obs) == 450
    # Pendulum truncates at 200 steps and never terminates; the unfinished last episode is ended
    assert np.flatnonzero(loaded.truncated).tolist() == [199, 399, 449]
    assert not loaded.terminated.any()
    assert np.all(np.abs(loaded.action) <= 2.0) and loaded.action.dtype == np.float32
    assert np.array_equal(loaded.next_obs[:199], loaded.obs[1:200])
    collect(run_dir, 450, tmp_path / "b.npz", noise=0.3, seed=4)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    other = collect(run_dir, 450, tmp_path / "c.npz", noise=0.3, seed=5)
    assert not np.array_equal(other.action, t.action)
    # the mean action without noise is the agent's deterministic action (collect acts on one
    # observation at a time, the agent here on a batch of 5: another order of the same sums)
    mean = collect(run_dir, 5, tmp_path / "d.npz", deterministic=True)
    np.testing.assert_allclose(mean.action, funcsac.load(run_dir).act(mean.obs),
                               **reordered(torch.float32))


def test_collect_command(run_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    done = subprocess.run([sys.executable, "-m", "funcsac", "collect", str(run_dir), "--steps",
                           "20", "--out", str(out), "--seed", "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}.npz" in done.stdout and len(load_dataset(f"{out}.npz").obs) == 20
    for args, message in (([tmp_path / "none", "--steps", 5], "not a directory"),
                          ([run_dir, "--steps", 0], "steps must be >= 1"),
                          ([run_dir, "--steps", 5, "--noise", -1], "noise must be"),
                          ([run_dir, "--steps", 5, "--agent", 1], "agent index 1 out of range")):
        assert main(["collect", *map(str, args), "--out", str(tmp_path / "x")]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()
