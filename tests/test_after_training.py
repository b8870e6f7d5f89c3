"""After training: loading a run, evaluating and recording it, callbacks that stop a run, new
hyperparameter values on resume, and the W&B logger."""
import dataclasses
import logging
import glob
import os
import time

import numpy as np
import pytest
import torch

import funcsac
from funcsac.driver.cli import main
from funcsac.driver.run.agents import select
from helpers import TINY, eval_rows, reordered

RUN = funcsac.TrainConfig(total_steps=600, learning_starts=200, eval_every=300,
                          checkpoint_every=300, seed=5, **TINY)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("trained")
    return run_dir, funcsac.train(RUN, run_dir)


def test_load_acts_like_the_trained_state(trained):
    run_dir, result = trained
    agent = funcsac.load(run_dir)
    assert len(agent) == 1 and agent.step == RUN.total_steps and agent.config.seed == RUN.seed
    obs = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    expected = funcsac.act(result.state, torch.as_tensor(obs)).numpy() * 2.0  # Pendulum: [-2, 2]
    action = agent.act(obs)
    assert isinstance(action, np.ndarray) and action.dtype == np.float32 and action.shape == (7, 1)
    np.testing.assert_allclose(action, expected, rtol=0, atol=1e-6)
    one = agent.act(obs[0])  # a batch of 1 against one of 7: the same sums in another order
    assert one.shape == (1,)
    np.testing.assert_allclose(one, expected[0], **reordered(torch.float32))
    as_tensor = agent.act(torch.as_tensor(obs))
    assert isinstance(as_tensor, torch.Tensor)
    assert torch.allclose(as_tensor, torch.as_tensor(expected))
    # stochastic: the agent's own key advances, a given key repeats
    a, b = agent.act(obs, deterministic=False), agent.act(obs, deterministic=False)
    assert not np.array_equal(a, b) and np.all(np.abs(a) <= 2.0)
    key = funcsac.keys.make_key(3)
    assert np.array_equal(agent.act(obs, False, key), agent.act(obs, False, key))


def test_evaluate_repeats_the_last_eval_and_records_video(trained, capsys):
    pytest.importorskip("moviepy")
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    run_dir, result = trained
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    video = run_dir / "video"
    assert main(["evaluate", str(run_dir), "--episodes", "1", "--video", str(video)]) == 0
    assert "return" in capsys.readouterr().out
    rows = eval_rows(run_dir)  # the run's own eval.csv: its last row is the final evaluation
    header, saved = rows[0], dict(zip(rows[0], rows[-1]))
    with open(run_dir / "evaluate.csv") as f:
        lines = f.read().splitlines()
    row = dict(zip(lines[0].split(","), lines[1].split(",")))
    assert "return_mean" in header and float(row["return_mean"]) == float(saved["return_mean"])
    assert int(row["step"]) == RUN.total_steps and row["episodes"] == "1"
    # Pendulum episodes are 200 steps; the video holds the reset frame and one frame per step
    # (the writer may drop the last)
    (mp4,) = glob.glob(str(video / "agent0-episode-0.mp4"))
    frames, _ = imageio_ffmpeg.count_frames_and_secs(mp4)
    assert frames in (200, 201)
    # other seeds give other episodes, and are recorded in the CSV
    assert main(["evaluate", str(run_dir), "--episodes", "2", "--seed", "7"]) == 0
    with open(run_dir / "evaluate.csv") as f:
        last = dict(zip(lines[0].split(","), f.read().splitlines()[-1].split(",")))
    assert last["seed"] == "7" and last["episodes"] == "2"


def test_a_run_trained_on_another_device_loads_on_the_cpu(trained, tmp_path):
    # checkpoints keep tensors on the CPU and the device in the config: a GPU run's checkpoint
    # differs from a CPU run's only there
    run_dir, result = trained
    payload = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    payload["config"]["device"] = "cuda:0"
    torch.save(payload, tmp_path / "checkpoint.pt")
    agent = funcsac.load(tmp_path)
    assert agent.config.device == "cpu" and agent.state.actor["0.weight"].device.type == "cpu"
    obs = torch.randn(4, 3)
    torch.testing.assert_close(agent.act(obs), funcsac.act(result.state, obs) * 2.0)


def test_load_several_agents(tmp_path):
    cfg = dataclasses.replace(RUN, total_steps=300, num_seeds=2, sweep="tau=0.01,0.02",
                              eval_every=0)
    result = funcsac.train(cfg, tmp_path)
    agent = funcsac.load(tmp_path)
    assert len(agent) == 4
    assert [s.overrides["tau"] for s in agent.agent_specs] == [0.01, 0.01, 0.02, 0.02]
    obs = torch.randn(5, 3)
    with pytest.raises(ValueError, match="has 4 agents; act with one of them"):
        agent.act(obs)
    for i in range(4):
        expected = funcsac.act(select(result.state, i, 4), obs) * 2.0
        torch.testing.assert_close(agent[i].act(obs), expected)
        tau = agent.agent_specs[i].overrides["tau"]
        assert agent[i].state.hparams.tau.item() == pytest.approx(tau)
    with pytest.raises(IndexError, match="out of range"):
        agent[4]
    results = funcsac.driver.evaluate_agent(agent, episodes=1)
    assert [r.agent for r in results] == [0, 1, 2, 3]


def test_load_refuses_what_is_not_a_run(tmp_path, trained, capsys):
    with pytest.raises(ValueError, match="not a directory"):
        funcsac.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="no checkpoint"):
        funcsac.load(tmp_path)
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt or unreadable"):
        funcsac.load(tmp_path)
    torch.save({"weights": torch.zeros(3)}, tmp_path / "checkpoint.pt")
    with pytest.raises(ValueError, match="not a funcsac run checkpoint"):
        funcsac.load(tmp_path)
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "not a funcsac run checkpoint" in capsys.readouterr().err


def test_a_run_of_an_env_whose_module_is_missing_is_refused_in_one_line(tmp_path, capsys,
                                                                         monkeypatch):
    """A run of ``--env-id module:Env-v0`` evaluated (or loaded) where the module cannot be
    imported: one line naming the module, as a start of training with it gives."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "funcsac_test_cam.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('Cam-v0', entry_point='gymnasium.envs.classic_control:PendulumEnv',\n"
        "             max_episode_steps=50)\n")
    with monkeypatch.context() as patch:
        patch.syspath_prepend(str(code))
        config = dataclasses.replace(RUN, env_id="funcsac_test_cam:Cam-v0", total_steps=100,
                                     learning_starts=50, eval_every=100)
        funcsac.train(config, tmp_path / "run")
    monkeypatch.delitem(__import__("sys").modules, "funcsac_test_cam")
    capsys.readouterr()
    for argv in (["evaluate", str(tmp_path / "run")],
                 ["train", "--env-id", "funcsac_test_cam:Cam-v0", "--run-dir",
                  str(tmp_path / "new")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "its module 'funcsac_test_cam'" in err and "Traceback" not in err, err


def test_a_run_stopped_before_its_first_evaluation_returns_without_one(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="funcsac"):
        result = funcsac.train(RUN, tmp_path, callbacks=[lambda report: report.step >= 100])
    assert result.stopped_early and result.evals == [] and result.state.step.item() == 0
    assert not (tmp_path / "curve.png").exists() and (tmp_path / "checkpoint.pt").is_file()
    assert "100 env steps x 1 agent(s), 0 updates each" in caplog.text
    assert "no evaluation yet" in caplog.text


def test_a_callback_stops_the_run_and_resume_finishes_it(tmp_path):
    seen = []

    def stop_at_300(report):
        seen.append((report.step, len(report.logs), len(report.evals), report.checkpointed))
        return report.step >= 300

    cfg = dataclasses.replace(RUN, checkpoint_every=0)  # the stop itself writes the checkpoint
    stopped = funcsac.train(cfg, tmp_path / "stopped", callbacks=[stop_at_300])
    assert stopped.stopped_early and stopped.state.step.item() == 300 - RUN.learning_starts + 1
    assert seen == [(100, 1, 0, False), (200, 1, 0, False), (300, 1, 1, False)]
    resumed = funcsac.train(cfg, tmp_path / "stopped", resume=True)
    straight = funcsac.train(cfg, tmp_path / "straight")
    assert not resumed.stopped_early
    assert eval_rows(tmp_path / "stopped") == eval_rows(tmp_path / "straight")
    for x, y in zip(torch.utils._pytree.tree_leaves(resumed.state),
                    torch.utils._pytree.tree_leaves(straight.state)):
        assert torch.equal(x, y)


def test_resume_takes_new_dynamic_hyperparameters(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="funcsac")
    cfg = dataclasses.replace(RUN, total_steps=300, eval_every=0, num_seeds=2,
                              sweep="tau=0.01,0.02")
    funcsac.train(cfg, tmp_path)
    more = dataclasses.replace(cfg, total_steps=400, critic_lr=3e-4, gamma=0.9, tau=0.5)
    result = funcsac.train(more, tmp_path, resume=True)
    assert "critic_lr 0.001 -> 0.0003" in caplog.text
    hp = result.state.hparams
    torch.testing.assert_close(hp.critic_lr, torch.full((4,), 3e-4))
    torch.testing.assert_close(hp.gamma, torch.full((4,), 0.9))
    torch.testing.assert_close(hp.tau, torch.tensor([0.01, 0.01, 0.02, 0.02]))  # the sweep's own
    with pytest.raises(ValueError, match=r"different configuration \(batch_size"):
        funcsac.train(dataclasses.replace(more, batch_size=64), tmp_path, resume=True)


class _Writer:
    """A stand-in for torch.utils.tensorboard.SummaryWriter that records its calls."""
    made = []

    def __init__(self, logdir):
        self.logdir, self.scalars, self.images, self.closed = logdir, [], [], False
        _Writer.made.append(self)

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, step))

    def add_image(self, tag, image, step, dataformats):
        self.images.append((tag, step, image.shape[-1], dataformats))

    def close(self):
        self.closed = True


def test_tensorboard_is_written_only_on_request_with_its_folder_and_tags(tmp_path, monkeypatch):
    import sys
    import types
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard",
                        types.SimpleNamespace(SummaryWriter=_Writer))
    _Writer.made.clear()
    cfg = dataclasses.replace(RUN, total_steps=300, eval_every=300)
    funcsac.train(cfg, tmp_path / "off")
    assert not _Writer.made  # off unless asked for, though installed
    funcsac.train(dataclasses.replace(cfg, tensorboard=True), tmp_path / "on")
    (writer,) = _Writer.made
    assert writer.logdir == str(tmp_path / "on" / "tensorboard") and writer.closed
    tags = {tag for tag, _ in writer.scalars}
    assert {"train/critic_loss", "train/time_update", "eval/return_mean"} <= tags
    assert ("eval/return_mean", 300) in writer.scalars
    assert writer.images == [("curve", 300, 3, "HWC")]


def test_tensorboard_without_the_package_says_which_extra(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails
    with pytest.raises(ValueError, match=r"--tensorboard needs tensorboard: pip install "
                                         r"'funcsac\[tensorboard\]'"):
        funcsac.train(dataclasses.replace(RUN, total_steps=300, tensorboard=True), tmp_path)


def test_wandb_offline_log(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = dataclasses.replace(RUN, total_steps=300, eval_every=200, wandb_project="funcsac-test",
                              wandb_mode="offline")
    funcsac.train(cfg, tmp_path)
    run_id = (tmp_path / "wandb-id").read_text()
    (log,) = glob.glob(str(tmp_path / "wandb" / f"offline-run-*-{run_id}" / f"run-{run_id}.wandb"))
    names = (b"train/critic_loss", b"eval/return_mean", b"curve", b"critic_lr")
    # W&B's service process writes the log on its own schedule, after finish() has returned
    # (on a busy machine, seconds later): read it until it holds the records or a minute passed
    deadline = time.monotonic() + 60
    while not all(name in open(log, "rb").read() for name in names) \
            and time.monotonic() < deadline:
        time.sleep(0.5)
    data = open(log, "rb").read()
    for name in names:
        assert name in data, name
    funcsac.train(dataclasses.replace(cfg, total_steps=400), tmp_path, resume=True)
    assert (tmp_path / "wandb-id").read_text() == run_id  # the same W&B run, continued
    assert len(glob.glob(str(tmp_path / "wandb" / f"offline-run-*-{run_id}"))) >= 1
    with pytest.raises(ValueError, match="wandb_mode must be 'online' or 'offline'"):
        dataclasses.replace(cfg, wandb_mode="cloud")
