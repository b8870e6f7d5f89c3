"""Sweeps on Ray Tune, on a local Ray instance: FIFO, ASHA, PBT, and an interrupted experiment
that resumes."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import funcsac  # noqa: E402
from funcsac.driver.cli import main  # noqa: E402
from funcsac.driver.tools.search import parse_search  # noqa: E402
from funcsac.driver.tools.tune import TuneSettings, load_settings, run_tune, trial_config  # noqa: E402

# a trial: 3 evaluations in 600 env steps, eager, seconds each
BASE = funcsac.TrainConfig(total_steps=600, learning_starts=100, eval_every=200, eval_episodes=1,
                           hidden_sizes=(16, 16), batch_size=32, compile=False,
                           progress=False).to_dict()
FLAGS = ["--total-steps", "600", "--learning-starts", "100", "--eval-every", "200",
         "--eval-episodes", "1", "--hidden-sizes", "16", "16", "--batch-size", "32",
         "--no-compile"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _settings(*searches, **kw):
    return TuneSettings(BASE, tuple(parse_search(s) for s in searches), **kw)


def _last_return(run_dir) -> float:
    return funcsac.driver.tools.plot.read_curves(run_dir)[""][1][-1]


def test_parse_search_and_settings_errors():
    s = parse_search("hidden-sizes=choice((64, 64), (256, 256))")
    assert (s.name, s.kind, s.args, s.dynamic) == ("hidden_sizes", "choice",
                                                   ((64, 64), (256, 256)), False)
    assert parse_search("critic_lr=loguniform(1e-4,3e-3)").dynamic
    for text, message in [("critic_lr", "must look like NAME=KIND"),
                          ("critic_lr=normal(0,1)", "must look like NAME=KIND"),
                          ("lr=uniform(0,1)", "'lr' is not a setting"),
                          ("tau=uniform(0)", "takes 2 argument"),
                          ("tau=loguniform(0,1)", "0 < low < high"),
                          ("tau=choice(a)", "Python literals")]:
        with pytest.raises(ValueError, match=message):
            parse_search(text)
    with pytest.raises(ValueError, match="PBT can only mutate dynamic"):
        _settings("hidden_sizes=choice((8,),(16,))", scheduler="pbt")
    with pytest.raises(ValueError, match="TrainConfig.batch_size must be an integer"):
        _settings("batch_size=choice(32, 0)")
    with pytest.raises(ValueError, match="SACConfig.tau must be in"):
        _settings("tau=uniform(0.5, 2)")
    with pytest.raises(ValueError, match="--seeds-per-trial instead of --num-seeds"):
        TuneSettings({**BASE, "num_seeds": 4}, (parse_search("tau=choice(0.01)"),))


def test_fifo_trials_complete_with_vmapped_seeds(local_ray, tmp_path):
    settings = _settings("tau=grid(0.01, 0.02)", "critic_lr=choice(1e-3, 3e-4)",
                         num_samples=1, seeds_per_trial=2)
    results = run_tune(settings, tmp_path, "fifo")
    assert len(results) == 2 and not results.errors
    for r in results:
        assert r.metrics["env_step"] == 600 and np.isfinite(r.metrics["eval_return"])
        agent = funcsac.load(r.checkpoint.path)  # the trial's last checkpoint is a run
        assert len(agent) == 2 and agent.step == 600
        np.testing.assert_allclose(agent.state.hparams.tau.numpy(), [r.config["tau"]] * 2,
                                   rtol=1e-6)
        returns = [float(row["return_mean"]) for row in _eval_rows(r.checkpoint.path)[-2:]]
        assert r.metrics["eval_return"] == pytest.approx(np.mean(returns))
    assert (tmp_path / "fifo" / "best.png").is_file()
    assert load_settings(tmp_path / "fifo") == settings


def _eval_rows(run_dir):
    import csv
    with open(os.path.join(run_dir, "eval.csv"), newline="") as f:
        return list(csv.DictReader(f))


# Ray's scheduler at work; funcsac's reports are checked by the FIFO and PBT tests
@pytest.mark.slow
def test_asha_stops_a_weak_trial(local_ray, tmp_path):
    # two MountainCar trials (returns near 0) report first; the Pendulum trial that follows
    # (returns near -1000) falls below the rung's median and is stopped at its first report
    envs = ["MountainCarContinuous-v0"] * 2 + ["Pendulum-v1"]
    settings = _settings(f"env_id=grid{tuple(envs)}", scheduler="asha")
    results = run_tune(settings, tmp_path, "asha")
    iterations = {r.path: r.metrics["training_iteration"] for r in results}
    stopped = [r for r in results if r.metrics["training_iteration"] < 3]
    assert stopped and all(r.config["env_id"] == "Pendulum-v1" for r in stopped), iterations


def test_pbt_exploits_and_the_mutation_reaches_the_state(local_ray, tmp_path):
    settings = _settings("critic_lr=loguniform(1e-4, 3e-3)", scheduler="pbt", pbt_interval=1)
    results = run_tune(settings, tmp_path, "pbt")
    assert not results.errors
    mutated = 0
    for r in results:
        history = r.metrics_dataframe
        assert history["env_step"].iloc[-1] == 600
        # the state's value, as reported and as the last checkpoint holds it, is the config's
        final = funcsac.load(r.checkpoint.path).state.hparams.critic_lr.item()
        assert final == pytest.approx(r.config["critic_lr"], rel=1e-6)
        assert history["state_critic_lr"].iloc[-1] == pytest.approx(final, rel=1e-6)
        mutated += history["state_critic_lr"].nunique() > 1
    assert mutated >= 1  # at least one trial continued another's checkpoint with a new value


def test_a_killed_experiment_resumes_exactly(tmp_path):
    argv = [sys.executable, "-m", "funcsac", "tune", "--storage", str(tmp_path), "--name", "exp",
            "--search", "tau=grid(0.005, 0.05)", "--num-samples", "1", *FLAGS]
    # MKL as shipped, as in this process, whose runs it is compared with (the command would
    # choose MKL's kernels for the CPU on an AMD one: other rounding)
    env = {**os.environ, "TUNE_GLOBAL_CHECKPOINT_S": "0", "OMP_NUM_THREADS": "1",
           "FUNCSAC_MKL_VENDOR_CHECK": "shipped"}
    proc = subprocess.Popen(argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    exp = tmp_path / "exp"
    deadline = time.time() + 120
    # both trials started (each has reported once), so the experiment's state lists both
    while len(list(exp.glob("trial_*/checkpoint_000001"))) < 2 and time.time() < deadline:
        assert proc.poll() is None, "the experiment ended before it could be interrupted"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray instance it started
    proc.wait()
    assert len(list(exp.glob("trial_*/checkpoint_000002"))) < 2, "killed too late"
    # the worst moment to be killed: as Tune wrote its state file, which it does in place
    state = max(exp.glob("experiment_state-*.json"))
    state.write_text(state.read_text()[:100])
    assert main(["tune", "--storage", str(tmp_path), "--name", "exp", "--resume"]) == 0
    for tau in (0.005, 0.05):
        trial = [p for p in exp.glob("trial_*") if _trial_tau(p) == tau]
        assert len(trial) == 1
        last = sorted(trial[0].glob("checkpoint_*"))[-1]
        straight = tmp_path / f"straight-{tau}"
        funcsac.train(trial_config(BASE, {"tau": tau}, 1), straight)
        assert _eval_rows(last) == _eval_rows(straight)  # every evaluation, bit for bit


def test_a_snapshot_restores_the_state_files_a_kill_cut_short(tmp_path):
    from funcsac.driver.tools.tune_state import restore_snapshot, write_snapshot
    staging, exp = tmp_path / "staging", tmp_path / "exp"
    staging.mkdir(), exp.mkdir()
    files = {"experiment_state-1.json": '{"trials": [1, 2]}', "basic-variant-state-1.json": "s"}
    for name, text in files.items():
        (staging / name).write_text(text)
        (exp / name).write_text(text)
    write_snapshot([staging / "basic-variant-state-1.json"], exp)  # an older one, superseded
    write_snapshot(sorted(staging.iterdir()), exp)
    assert [p.name for p in exp.glob(".funcsac-state-*")] == [".funcsac-state-000001"]
    (exp / "experiment_state-1.json").write_text('{"tri')  # cut short
    (exp / "basic-variant-state-1.json").unlink()
    (exp / "experiment_state-2.json").write_text("")  # a later session, killed at once
    with pytest.warns(UserWarning, match="experiment_state-2.json was cut short"):
        restore_snapshot(exp)
    assert {n: (exp / n).read_text() for n in files} == files
    assert not (exp / "experiment_state-2.json").exists()
    assert (exp / "experiment_state-2.json.cut-short").exists()


def test_a_resume_with_no_whole_state_is_refused_rather_than_restarted(tmp_path):
    from funcsac.driver.tools.tune_state import restore_snapshot
    (tmp_path / "experiment_state-1.json").write_text("")
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="no whole Tune experiment"):
        restore_snapshot(tmp_path)


def _trial_tau(trial_dir) -> float:
    import json
    return json.loads((trial_dir / "params.json").read_text())["tau"]


def test_the_results_table_reads_a_trials_values_from_its_folder_when_its_result_lacks_them(
        tmp_path):
    """A trial restored from an experiment killed as it started may come back without its
    config in its last result; its searched values are in the params.json Tune wrote."""
    import json
    from types import SimpleNamespace

    from funcsac.driver.tools.tune import results_table, searches_of
    (tmp_path / "trial_b").mkdir()
    (tmp_path / "trial_b" / "params.json").write_text(json.dumps({"tau": 0.05}))
    results = [SimpleNamespace(config={"tau": 0.005}, path=str(tmp_path / "trial_a"),
                               metrics={"config": {"tau": 0.005}, "eval_return": -300.0,
                                        "env_step": 600}),
               SimpleNamespace(config=None, path=str(tmp_path / "trial_b"),
                               metrics={"eval_return": -200.0, "env_step": 600})]
    table = results_table(results, searches_of(["tau=grid(0.005, 0.05)"]))
    assert table.splitlines()[2:] == ["| trial_b | 0.05 | 600 | -200.0 |",
                                      "| trial_a | 0.005 | 600 | -300.0 |"]
