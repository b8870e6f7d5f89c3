"""The training driver: transitions, buffer, reproducibility, resume, errors, learning."""
import csv
import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

import funcsac
import toy_envs  # noqa: F401  (registers funcsac-test/Count-v0)
from funcsac.driver.cli import main
from funcsac.driver.run import collector, loop, recorder
from funcsac.driver.replay.buffer import ReplayBuffer
from funcsac.driver.run.checkpoint import load_checkpoint
from funcsac.driver.replay.files import load_buffer, save_buffer
from helpers import TINY, assert_states_equal, crash_then_resume, eval_rows



def _buffer_rows(run_dir):
    manifest = load_checkpoint(run_dir / "checkpoint.pt")["buffers"][0]
    buffer = ReplayBuffer(manifest["capacity"], obs_shape=2, act_dim=1, device="cpu")
    load_buffer(run_dir, 0, buffer, manifest)
    rows = buffer.rows(buffer.oldest, buffer.added)
    return rows["obs"], rows["next_obs"], rows["reward"], rows["terminated"]


@pytest.mark.parametrize("mode", ["same-step", "next-step"])
def test_autoreset_transitions(tmp_path, mode):
    cfg = funcsac.TrainConfig(env_id="funcsac-test/Count-v0", total_steps=24, num_envs=2,
                              learning_starts=1000, autoreset_mode=mode, eval_every=0, **TINY)
    funcsac.train(cfg, tmp_path)
    obs, next_obs, reward, terminated = _buffer_rows(tmp_path)
    # only real transitions: t -> t + 1 within one episode, never a reset step
    assert torch.equal(next_obs[:, 0], obs[:, 0]) and torch.equal(next_obs[:, 1], obs[:, 1] + 1)
    torch.testing.assert_close(reward, next_obs[:, 1])
    # terminated only at the end of even episodes; truncated odd episodes bootstrap
    last = next_obs[:, 1] == 3
    assert torch.equal(terminated.bool(), last & (obs[:, 0] % 2 == 0))
    assert (last & (obs[:, 0] % 2 == 1)).any()
    assert len(obs) == (24 if mode == "same-step" else 24 - 2 * (24 // 2 // 4))


def test_buffer_ring_and_sampling(tmp_path):
    buf = ReplayBuffer(5, obs_shape=1, act_dim=1, device="cpu")
    def rows(lo, hi):
        column = torch.arange(lo, hi, dtype=torch.float32)
        return {k: column[:, None] if k in ("obs", "action", "next_obs") else column
                for k in ("obs", "action", "reward", "next_obs", "terminated")}
    buf.add(rows(0, 3))
    buf.add(rows(3, 7))
    assert buf.size == 5 and sorted(buf.data["reward"].tolist()) == [2, 3, 4, 5, 6]
    key = funcsac.keys.make_key(0)
    (a, _), (b, _) = buf.sample(key, 1000), buf.sample(key, 1000)
    assert torch.equal(a.obs, b.obs) and set(a.reward.tolist()) == {2, 3, 4, 5, 6}
    restored = ReplayBuffer(5, 1, 1, "cpu")
    load_buffer(tmp_path, 0, restored, save_buffer(tmp_path, 0, buf, {}))
    assert torch.equal(restored.sample(key, 50)[0].obs, buf.sample(key, 50)[0].obs)


RESUME = funcsac.TrainConfig(total_steps=600, learning_starts=150, eval_every=200,
                             checkpoint_every=200, seed=3, **TINY)


def test_same_seed_same_results_and_resume_after_crash(tmp_path, monkeypatch):
    first = funcsac.train(RESUME, tmp_path / "a")
    funcsac.train(RESUME, tmp_path / "b")
    assert eval_rows(tmp_path / "a") == eval_rows(tmp_path / "b")
    assert [e.step for e in first.evals] == [200, 400, 600]

    # crash after the checkpoint at 400 (the eval at 600 fails), then resume
    resumed = crash_then_resume(RESUME, tmp_path / "c", monkeypatch, 600)
    assert eval_rows(tmp_path / "c") == eval_rows(tmp_path / "a")
    assert_states_equal(resumed.state, first.state)
    with open(tmp_path / "c" / "metrics.csv") as f:
        steps = [int(r["step"]) for r in csv.DictReader(f)]
    assert steps == sorted(set(steps))  # rows after the checkpoint were not duplicated


def test_async_envs_train(tmp_path):
    cfg = dataclasses.replace(RESUME, total_steps=200, learning_starts=100, num_envs=2,
                              async_envs=True, eval_every=0)
    result = funcsac.train(cfg, tmp_path)
    # vector steps end at env steps 2, 4, ..., 200; those from 100 on each run 2 updates
    assert result.state.step.item() == 2 * 51 and len(result.evals) == 1


def test_extend_a_finished_run_and_refuse_a_different_config(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="funcsac")
    short = dataclasses.replace(RESUME, total_steps=400)
    funcsac.train(short, tmp_path)
    assert "400 env steps" in caplog.text  # the run's summary is there...
    assert "the default of" not in caplog.text and "n_step" not in caplog.text  # ...no defaults
    caplog.clear()
    assert main(["train", "--run-dir", str(tmp_path), "--resume", "--total-steps", "600"]) == 0
    assert f"resumed {tmp_path} at env step 400 of 600" in caplog.text
    assert len(eval_rows(tmp_path)) == 4
    with pytest.raises(ValueError, match=r"different configuration \(num_critics"):
        funcsac.train(dataclasses.replace(RESUME, num_critics=3), tmp_path, resume=True)


@pytest.mark.parametrize("argv,message", [
    (["--env-id", "NoSuchEnv-v9"], "cannot create environment 'NoSuchEnv-v9'"),
    (["--env-id", "CartPole-v1", "--algorithm", "tqc"],
     "SACConfig.algorithm must be one of ['sac'] for the categorical policy"),
    (["--resume"], "holds no run to continue"),
    (["--gamma", "2"], "SACConfig.gamma must be in"),
    (["--batch-size", "0"], "TrainConfig.batch_size must be an integer >= 1"),
])
def test_cli_errors(tmp_path, capsys, argv, message):
    assert main(["train", "--run-dir", str(tmp_path / "run"), "--no-progress"] + argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # a start that fails leaves no run directory


def test_corrupt_or_missing_checkpoint(tmp_path, capsys):
    funcsac.train(dataclasses.replace(RESUME, total_steps=100, learning_starts=50), tmp_path)
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    assert main(["train", "--run-dir", str(tmp_path), "--resume"]) == 2
    assert "is corrupt or unreadable" in capsys.readouterr().err
    (tmp_path / "checkpoint.pt").unlink()
    assert main(["train", "--run-dir", str(tmp_path), "--resume"]) == 2
    assert "no checkpoint at" in capsys.readouterr().err


def test_config_file_and_flags(tmp_path):
    path = tmp_path / "my.toml"
    path.write_text('total-steps = 10\ncritic_lr = 0.0005\nhidden_sizes = [8, 8]\n')
    args = ["train", "--run-dir", str(tmp_path / "run"), "--config", str(path), "--critic-lr",
            "0.002", "--no-compile", "--no-progress", "--learning-starts", "5", "--batch-size", "4"]
    assert main(args) == 0
    import json
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["total_steps"] == 10 and saved["critic_lr"] == 0.002
    assert saved["hidden_sizes"] == [8, 8] and saved["agent"]["target_entropy"] == -1.0
    assert main(["plot", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "curve.png").stat().st_size > 0


def test_the_docs_example_config_file_names_its_preset(tmp_path):
    """docs/examples/flashsac-hopper.toml through the command line, shrunk by flags: the
    file's preset key brings the preset's settings, the file's keys and the flags win over it."""
    path = Path(__file__).resolve().parents[1] / "docs" / "examples" / "flashsac-hopper.toml"
    run = tmp_path / "run"
    assert main(["train", "--config", str(path), "--run-dir", str(run), "--total-steps", "30",
                 "--learning-starts", "20", "--batch-size", "8", "--num-seeds", "1",
                 "--hidden-sizes", "8", "8", "--actor-hidden-sizes", "8", "8",
                 "--eval-every", "0", "--checkpoint-every", "0", "--no-compile",
                 "--no-progress"]) == 0
    import json
    saved = json.loads((run / "config.json").read_text())
    assert (saved["env_id"], saved["algorithm"], saved["network"], saved["noise_hold"]) == (
        "Hopper-v5", "flashsac", "flashsac", 2.0)
    assert (saved["total_steps"], saved["hidden_sizes"], saved["lr_decay_shape"]) == (
        30, [8, 8], "cosine")


def test_pendulum_learns(tmp_path):
    settings = {**TINY, "hidden_sizes": (64, 64), "eval_episodes": 5, "batch_size": 256}
    cfg = funcsac.TrainConfig(env_id="Pendulum-v1", total_steps=6000, learning_starts=1000,
                              eval_every=1000, seed=1, **settings)
    result = funcsac.train(cfg, tmp_path)
    best = max(e.return_mean for e in result.evals)
    assert best >= -250, [e.return_mean for e in result.evals]


def test_preset_with_flag_override(tmp_path):
    args = ["train", "--run-dir", str(tmp_path), "--preset", "droq", "--utd", "2", "--total-steps",
            "40", "--learning-starts", "20", "--batch-size", "8", "--hidden-sizes", "8",
            "--no-compile", "--no-progress", "--eval-episodes", "1"]
    assert main(args) == 0
    import json
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["critic_dropout"] == 0.01 and saved["critic_layer_norm"] and saved["utd"] == 2
    assert saved["agent"]["policy_delay"] == 20
    with pytest.raises(SystemExit):  # argparse lists the known presets
        main(["train", "--run-dir", str(tmp_path / "x"), "--preset", "nope"])


SEEDS = dataclasses.replace(RESUME, total_steps=400, learning_starts=200, eval_every=200,
                            checkpoint_every=0, dtype="float64")


def _returns(run_dir, **where):
    with open(run_dir / "eval.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if all(r[k] == str(v) for k, v in where.items())]
    return [float(r["return_mean"]) for r in rows]


def test_num_seeds_equals_separate_runs(tmp_path):
    together = funcsac.train(dataclasses.replace(SEEDS, num_seeds=4), tmp_path / "together")
    assert together.state.step.shape == (4,)
    for s in range(4):
        alone = funcsac.train(dataclasses.replace(SEEDS, seed=SEEDS.seed + s), tmp_path / f"s{s}")
        # vmapped and single updates round differently; float64 keeps that far below the tolerance
        np.testing.assert_allclose(_returns(tmp_path / "together", seed=SEEDS.seed + s),
                                   _returns(tmp_path / f"s{s}"), rtol=1e-6)
        for x, y in zip(torch.utils._pytree.tree_leaves(together.state),
                        torch.utils._pytree.tree_leaves(alone.state)):
            torch.testing.assert_close(x[s], y, rtol=1e-6, atol=1e-8)
    assert main(["plot", str(tmp_path / "together"), str(tmp_path / "s0")]) == 0


def test_sweep_sets_each_agents_hyperparameter(tmp_path):
    cfg = dataclasses.replace(SEEDS, total_steps=300, eval_every=300, sweep="critic_lr=1e-4,1e-3",
                              num_seeds=2)
    result = funcsac.train(cfg, tmp_path)
    torch.testing.assert_close(result.state.hparams.critic_lr,
                               torch.tensor([1e-4, 1e-4, 1e-3, 1e-3], dtype=torch.float64))
    assert result.state.key.shape == (4, 2)
    assert len(_returns(tmp_path, critic_lr=0.001, seed=SEEDS.seed + 1)) == 1
    with pytest.raises(ValueError, match="--sweep must look like"):
        dataclasses.replace(SEEDS, sweep="hidden_sizes=1,2")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["redq", "droq"])
def test_preset_learns_pendulum(tmp_path, name):
    """UTD 20, compiled as in real use; Pendulum is solved within 1,250 env steps (both reached
    about -125 by then on this seed). DroQ trains on batches of 128 here, which halves its update
    time (its compile takes most of the test): -672 at 1,000 steps, -125 at 1,250."""
    cfg = funcsac.TrainConfig.from_dict({
        **funcsac.presets.preset(name), "env_id": "Pendulum-v1", "total_steps": 1250,
        "learning_starts": 500, "eval_every": 250, "eval_episodes": 3, "hidden_sizes": (64, 64),
        "progress": False, "seed": 1, "batch_size": 128 if name == "droq" else 256})
    result = funcsac.train(cfg, tmp_path)
    assert result.state.step.item() == 751 * 20
    assert max(e.return_mean for e in result.evals) >= -250, [e.return_mean for e in result.evals]


def test_env_seeds_are_distinct_and_an_agent_does_not_depend_on_the_others():
    from funcsac.driver.run.agents import agent_specs
    from funcsac.driver.run.seeds import AgentSeeds
    specs = agent_specs(seed=1, num_seeds=2, sweep="")
    seeds = [AgentSeeds.of(a.seed, num_envs=2) for a in specs]
    env_seeds = [e for s in seeds for e in s.envs]
    assert len(set(env_seeds)) == 4
    every = [v for s in seeds for v in (s.agent, s.loop, s.eval, *s.envs)]
    assert len(set(every)) == len(every)
    assert AgentSeeds.of(1, num_envs=3).envs[:2] == seeds[0].envs


def test_agent_zero_of_two_seeds_equals_a_one_seed_run(tmp_path):
    cfg = dataclasses.replace(SEEDS, total_steps=300, num_envs=2)
    two = funcsac.train(dataclasses.replace(cfg, num_seeds=2), tmp_path / "two")
    one = funcsac.train(cfg, tmp_path / "one")
    np.testing.assert_allclose(_returns(tmp_path / "two", seed=cfg.seed),
                               _returns(tmp_path / "one"), rtol=1e-6)
    for x, y in zip(torch.utils._pytree.tree_leaves(two.state),
                    torch.utils._pytree.tree_leaves(one.state)):
        torch.testing.assert_close(x[0], y, rtol=1e-6, atol=1e-8)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_every_tensor_given_to_update_and_act_is_on_the_configured_device(
        tmp_path, monkeypatch, device):
    seen = []

    def checking(fn):
        def wrapped(*args, **kwargs):
            leaves = torch.utils._pytree.tree_leaves((args, kwargs))
            seen.extend(x.device for x in leaves if isinstance(x, torch.Tensor))
            return fn(*args, **kwargs)
        return wrapped

    from funcsac.driver.tools import evaluate as evaluate_module
    from funcsac.driver.run import step_functions
    real = step_functions.make_update
    monkeypatch.setattr(step_functions, "make_update", lambda *a: checking(real(*a)))
    monkeypatch.setattr(collector, "act", checking(collector.act))
    monkeypatch.setattr(evaluate_module, "act", checking(evaluate_module.act))
    cfg = dataclasses.replace(RESUME, total_steps=120, learning_starts=60, eval_every=0,
                              device=device)
    funcsac.train(cfg, tmp_path)
    assert len(seen) > 100 and set(seen) == {torch.device(device, 0) if device == "cuda"
                                             else torch.device(device)}


def test_envs_are_closed_when_a_run_fails(tmp_path, monkeypatch):
    closed = []
    real_make = loop.make_vector_env

    def recording(*args, **kwargs):
        envs = real_make(*args, **kwargs)
        real_close = envs.close
        envs.close = lambda **kw: (closed.append(True), real_close(**kw))
        return envs

    monkeypatch.setattr(loop, "make_vector_env", recording)
    monkeypatch.setattr(recorder, "evaluate",
                        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    with pytest.raises(RuntimeError):
        funcsac.train(dataclasses.replace(RESUME, total_steps=60, learning_starts=30,
                                          eval_every=30), tmp_path)
    assert closed == [True]


def test_csv_truncation_is_atomic(tmp_path, monkeypatch):
    from funcsac.platform import files as atomic
    from funcsac.driver.run.logs import CsvLog
    log = CsvLog(tmp_path / "m.csv", ["step", "x"])
    for s in range(5):
        log.write({"step": s, "x": s * s})
    before = (tmp_path / "m.csv").read_text()
    monkeypatch.setattr(atomic.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("full")))
    with pytest.raises(OSError):
        log.truncate_after(2)
    assert (tmp_path / "m.csv").read_text() == before and len(list(tmp_path.iterdir())) == 1
    monkeypatch.undo()
    log.truncate_after(2)
    assert [r["step"] for r in csv.DictReader(open(tmp_path / "m.csv"))] == ["0", "1", "2"]
