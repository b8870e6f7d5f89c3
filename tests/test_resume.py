"""Resume: exact on MuJoCo envs, safe against crafted checkpoints, incremental replay files,
atomic against a full disk, and a documented fallback for envs that cannot be saved."""
import dataclasses
import errno
import pickle

import pytest
import torch

import funcsac
import toy_envs  # noqa: F401  (registers funcsac-test/Count-v0)
from funcsac.driver.cli import main
from funcsac.driver.run import checkpoint as checkpoint_module
from funcsac.driver.run.checkpoint import load_checkpoint
from helpers import TINY, assert_states_equal, crash_at_eval, crash_then_resume, eval_rows


def _leaves(state):
    return torch.utils._pytree.tree_leaves(state)


def _assert_resume_is_exact(cfg, tmp_path, monkeypatch, crash_step):
    straight = funcsac.train(cfg, tmp_path / "straight")
    resumed = crash_then_resume(cfg, tmp_path / "crashed", monkeypatch, crash_step)
    assert eval_rows(tmp_path / "crashed") == eval_rows(tmp_path / "straight")
    for x, y in zip(_leaves(resumed.state), _leaves(straight.state), strict=True):
        assert torch.equal(x, y)


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_mujoco_resume_after_crash_is_bitwise_exact(tmp_path, monkeypatch, env_id):
    """The checkpoint at 300 falls mid-episode; Hopper terminates many episodes before it."""
    cfg = funcsac.TrainConfig(env_id=env_id, total_steps=400, learning_starts=200,
                              eval_every=300, checkpoint_every=300, seed=5,
                              **{**TINY, "eval_episodes": 1})
    _assert_resume_is_exact(cfg, tmp_path, monkeypatch, crash_step=400)


def test_ring_buffer_wraps_across_checkpoints_and_resumes_exactly(tmp_path, monkeypatch):
    """Replay chunks: each checkpoint writes only the new rows; chunks fully overwritten in the
    ring are deleted; a resume from a wrapped buffer is exact."""
    cfg = funcsac.TrainConfig(total_steps=700, learning_starts=100, eval_every=350,
                              checkpoint_every=100, buffer_size=250, seed=2, **TINY)
    _assert_resume_is_exact(cfg, tmp_path, monkeypatch, crash_step=700)
    chunks = sorted(p.name for p in (tmp_path / "straight" / "replay" / "agent0").iterdir())
    # rows 450..700 are live: chunks 400-500, 500-600, 600-700; older ones were deleted
    assert chunks == ["000000000400-000000000500.pt", "000000000500-000000000600.pt",
                      "000000000600-000000000700.pt"]


def test_a_longer_resume_keeps_prioritized_replays_beta_schedule(tmp_path):
    """beta anneals to 1 over the total_steps a run began with: a 300-step run continued to 600
    equals one stopped at 150 and continued to 600 (beta 1 from step 300 in both). A checkpoint
    from before the horizon was kept anneals over its config's total_steps."""
    cfg = funcsac.TrainConfig(total_steps=300, learning_starts=50, eval_every=150,
                              checkpoint_every=0, prioritized=True, seed=3,
                              **{**TINY, "log_every": 50})
    longer = dataclasses.replace(cfg, total_steps=600)
    funcsac.train(cfg, tmp_path / "a")
    continued = funcsac.train(longer, tmp_path / "a", resume=True)
    funcsac.train(cfg, tmp_path / "b", callbacks=[lambda report: report.step >= 150])
    payload = load_checkpoint(tmp_path / "b" / "checkpoint.pt")
    del payload["progress"]["beta_horizon"]  # as an older checkpoint
    torch.save(payload, tmp_path / "b" / "checkpoint.pt")
    stopped_early = funcsac.train(longer, tmp_path / "b", resume=True)
    assert_states_equal(stopped_early.state, continued.state)
    assert load_checkpoint(tmp_path / "b" / "checkpoint.pt")["progress"]["beta_horizon"] == 300


def test_a_longer_resume_without_prioritized_replay_equals_a_run_of_the_new_length(tmp_path):
    cfg = funcsac.TrainConfig(total_steps=100, learning_starts=50, eval_every=0, seed=3, **TINY)
    longer = dataclasses.replace(cfg, total_steps=200)
    funcsac.train(cfg, tmp_path / "a")
    assert_states_equal(funcsac.train(longer, tmp_path / "a", resume=True).state,
                        funcsac.train(longer, tmp_path / "b").state)


def test_crafted_checkpoint_runs_no_code(tmp_path, capsys):
    """An env field holding a pickle payload (or a pickled global anywhere) is refused; the
    payload never runs."""
    cfg = funcsac.TrainConfig(total_steps=100, learning_starts=50, eval_every=0, **TINY)
    funcsac.train(cfg, tmp_path)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    payload = load_checkpoint(tmp_path / "checkpoint.pt")
    payload["envs"] = pickle.dumps(Payload())
    torch.save(payload, tmp_path / "checkpoint.pt")
    assert main(["train", "--run-dir", str(tmp_path), "--resume"]) == 2
    assert "environment state cannot be restored" in capsys.readouterr().err
    payload["envs"] = [Payload()]  # a global in the checkpoint's own pickle
    torch.save(payload, tmp_path / "checkpoint.pt")
    assert not marker.exists()
    assert main(["train", "--run-dir", str(tmp_path), "--resume"]) == 2
    assert "corrupt or unreadable" in capsys.readouterr().err
    assert not marker.exists()


def test_unsaveable_env_resumes_with_fresh_episodes_and_a_warning(tmp_path, monkeypatch):
    cfg = funcsac.TrainConfig(env_id="funcsac-test/Count-v0", total_steps=60, learning_starts=20,
                              eval_every=0, checkpoint_every=30, **TINY)
    undo = crash_at_eval(monkeypatch, 60)
    with pytest.raises(RuntimeError, match="simulated crash"):
        funcsac.train(cfg, tmp_path)
    undo()
    with pytest.warns(UserWarning, match="resume is not exact for funcsac-test/Count-v0.*"
                                         "does not know how to save .*CountEnv"):
        result = funcsac.train(cfg, tmp_path, resume=True)
    assert result.evals[-1].step == 60


def test_full_disk_during_checkpoint_keeps_the_old_one(tmp_path, monkeypatch):
    cfg = funcsac.TrainConfig(total_steps=200, learning_starts=50, eval_every=0,
                              checkpoint_every=100, **TINY)
    funcsac.train(dataclasses.replace(cfg, total_steps=100), tmp_path)
    before = (tmp_path / "checkpoint.pt").read_bytes()
    real_save = torch.save

    def full_disk(obj, f):
        real_save(obj, f)
        f.truncate(100)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint_module.torch, "save", full_disk)
    with pytest.raises(ValueError, match="No space left on device.*previous version of it, if "
                                         "any, is intact"):
        funcsac.train(cfg, tmp_path, resume=True)
    monkeypatch.setattr(checkpoint_module.torch, "save", real_save)
    assert (tmp_path / "checkpoint.pt").read_bytes() == before
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.rglob("*.tmp"))
    assert funcsac.train(cfg, tmp_path, resume=True).evals[-1].step == 200


def test_a_new_run_refuses_a_run_directory_and_overwrite_moves_it_aside(tmp_path, capsys):
    run = tmp_path / "run"
    args = ["train", "--run-dir", str(run), "--total-steps", "20", "--learning-starts", "10",
            "--batch-size", "4", "--hidden-sizes", "8", "--no-compile", "--no-progress",
            "--eval-episodes", "1"]
    assert main(args) == 0
    before = (run / "eval.csv").read_text()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{run} already holds a run" in err and "--resume" in err and "--run-dir" in err
    assert (run / "eval.csv").read_text() == before
    assert main(args + ["--overwrite"]) == 0
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("run.old-")]
    assert len(aside) == 1 and (aside[0] / "eval.csv").read_text() == before
    assert main(args + ["--overwrite", "--resume"]) == 2


def test_explicit_none_flag_overrides_config_file_and_resumed_value(tmp_path):
    path = tmp_path / "my.toml"
    path.write_text("max_grad_norm = 1.0\nnum_target_critics = 1\n")
    run = tmp_path / "run"
    args = ["train", "--run-dir", str(run), "--config", str(path), "--total-steps", "20",
            "--learning-starts", "10", "--batch-size", "4", "--hidden-sizes", "8",
            "--no-compile", "--no-progress", "--eval-episodes", "1"]
    assert main(args + ["--max-grad-norm", "none", "--num-target-critics", "none"]) == 0
    import json
    saved = json.loads((run / "config.json").read_text())
    assert saved["max_grad_norm"] is None and saved["num_target_critics"] is None
    assert saved["agent"]["num_target_critics"] == 2


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "CartPole-v1", "Acrobot-v1", "MountainCar-v0",
                                    "MountainCarContinuous-v0", "HalfCheetah-v5", "Hopper-v5",
                                    "Ant-v5", "Humanoid-v5"])
def test_env_saved_as_data_continues_step_for_step(env_id):
    """An env restored into a fresh instance (through torch.load(weights_only=True)) gives the
    same observations, rewards, ends and resets as the original, for 150 steps after the save
    (MountainCar's state is a tuple after its first step: it is saved as one)."""
    import io

    import gymnasium as gym
    import numpy as np

    from funcsac.driver.envs.state import load_env, save_env
    original = gym.make(env_id)
    original.reset(seed=3)
    original.action_space.seed(0)
    actions = [original.action_space.sample() for _ in range(187)]
    for a in actions[:37]:
        original.step(a)
    buffer = io.BytesIO()
    torch.save(save_env(original), buffer)
    buffer.seek(0)
    restored = gym.make(env_id)
    load_env(restored, torch.load(buffer, weights_only=True))
    for a in actions[37:]:
        x, y = original.step(a), restored.step(a)
        assert np.array_equal(x[0], y[0]) and x[1:4] == y[1:4]
        if x[2] or x[3]:
            assert np.array_equal(original.reset()[0], restored.reset()[0])


def test_a_resume_on_another_machine_or_thread_count_says_it_is_not_bitwise(tmp_path, recwarn):
    cfg = funcsac.TrainConfig(total_steps=100, learning_starts=50, eval_every=0, **TINY)
    funcsac.train(cfg, tmp_path)
    assert load_checkpoint(tmp_path / "checkpoint.pt")["numerics"]["threads"] == \
        str(torch.get_num_threads())
    longer = dataclasses.replace(cfg, total_steps=150)
    funcsac.train(longer, tmp_path, resume=True)  # same machine and threads: no warning
    assert not [w for w in recwarn if "round differently" in str(w.message)]
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        with pytest.warns(UserWarning, match=rf"round differently \(threads '{threads}' -> "
                                             rf"'{threads + 1}'\)"):
            funcsac.train(dataclasses.replace(cfg, total_steps=200), tmp_path, resume=True)
    finally:
        torch.set_num_threads(threads)
