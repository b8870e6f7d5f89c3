"""Faults a run survives: an environment that raises or returns NaN or inf, a run directory that
becomes read-only, SIGINT and SIGTERM. Each stops with a clear error (or a checkpoint) and
leaves the last checkpoint intact and resumable."""
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import funcsac
import toy_envs  # noqa: F401  (registers funcsac-test/Faulty-*-v0)
from funcsac.driver.run import recorder
from funcsac.driver.run.checkpoint import load_checkpoint
from helpers import TINY, assert_states_equal, eval_rows

RUN = funcsac.TrainConfig(total_steps=300, learning_starts=50, eval_every=100,
                          checkpoint_every=100, seed=7, **TINY)


def _checkpoint_step(run_dir: Path) -> int:
    return int(load_checkpoint(run_dir / "checkpoint.pt")["progress"]["env_step"])


@pytest.mark.parametrize("fault, message", [
    ("raise", r"raised RuntimeError in step at env step 150 \(seed 7\): the simulator lost its "
              r"sensor; the run stopped there, its last checkpoint intact"),
    ("nan-obs", r"returned a non-finite observation \(NaN or inf\) at env step 150 \(seed 7\)"),
    ("inf-reward", r"returned a non-finite reward \(NaN or inf\) at env step 150 \(seed 7\)"),
])
def test_a_faulty_env_stops_the_run_naming_env_step_and_seed(tmp_path, fault, message):
    cfg = dataclasses.replace(RUN, env_id=f"funcsac-test/Faulty-{fault}-v0", eval_every=0)
    with pytest.raises(ValueError, match=f"funcsac-test/Faulty-{fault}-v0 {message}"):
        funcsac.train(cfg, tmp_path)
    assert _checkpoint_step(tmp_path) == 100
    assert funcsac.load(tmp_path).step == 100


def test_an_env_that_raises_in_an_evaluation_names_the_episode_and_its_seed(tmp_path):
    """The evaluation env's 150th step falls in the evaluation at step 100."""
    cfg = dataclasses.replace(RUN, env_id="funcsac-test/Faulty-raise-v0")
    with pytest.raises(ValueError, match=r"Faulty-raise-v0 raised RuntimeError in step at env "
                                         r"step 150 \(the evaluation at step 100, episode 0, "
                                         r"reset seed \d+\): the simulator lost its sensor"):
        funcsac.train(cfg, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_checkpoint_then_stop_and_the_resume_is_exact(tmp_path, monkeypatch,
                                                                         sig):
    real_evaluate = recorder.evaluate
    sent = []

    def interrupting(*args, **kwargs):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), sig)
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(recorder, "evaluate", interrupting)
    with pytest.raises(KeyboardInterrupt, match="interrupted at step 100; checkpoint written"):
        funcsac.train(RUN, tmp_path / "stopped")
    monkeypatch.setattr(recorder, "evaluate", real_evaluate)
    assert _checkpoint_step(tmp_path / "stopped") == 100
    resumed = funcsac.train(RUN, tmp_path / "stopped", resume=True)
    straight = funcsac.train(RUN, tmp_path / "straight")
    assert eval_rows(tmp_path / "stopped") == eval_rows(tmp_path / "straight")
    assert_states_equal(resumed.state, straight.state)


READ_ONLY = """
import sys, subprocess
sys.path.insert(0, {tests!r})
import funcsac, helpers
cfg = funcsac.TrainConfig(**{{**{settings!r}, **helpers.TINY}})

def read_only(report):  # after the checkpoint at step 100, the file system turns read-only
    if report.step == 100:
        subprocess.run(["mount", "-o", "remount,bind,ro", {run!r}], check=True)

try:
    funcsac.train(cfg, {run!r}, callbacks=[read_only])
except ValueError as e:
    print("ERROR", e)
"""


def test_a_run_directory_that_turns_read_only_stops_the_run_and_keeps_its_checkpoint(tmp_path):
    """The run directory is bind-mounted read-only (in a mount namespace of the test's own)
    after the checkpoint at step 100: the run stops with an error naming the file it could not
    write; the checkpoint at 100 is intact, and the resumed run equals an uninterrupted one."""
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-m", "mount", "-t", "tmpfs", "tmpfs", str(tmp_path)],
            capture_output=True).returncode != 0:
        pytest.skip("needs a mount namespace of its own (unshare -m, as root)")
    run = tmp_path / "run"
    run.mkdir()
    settings = {k: v for k, v in dataclasses.asdict(RUN).items() if k not in TINY}
    script = READ_ONLY.format(tests=str(Path(__file__).parent), settings=settings, run=str(run))
    done = subprocess.run(["unshare", "-m", "sh", "-c", f'mount --bind "{run}" "{run}" && '
                           f'exec "{sys.executable}" -c "$0"', script],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ERROR could not write" in done.stdout and "Read-only file system" in done.stdout, \
        done.stdout[-2000:]
    assert f"its last checkpoint in {run} is intact" in done.stdout
    assert _checkpoint_step(run) == 100
    resumed = funcsac.train(RUN, run, resume=True)
    straight = funcsac.train(RUN, tmp_path / "straight")
    assert eval_rows(run) == eval_rows(tmp_path / "straight")
    assert_states_equal(resumed.state, straight.state)


@pytest.mark.slow
def test_runs_killed_at_random_points_resume_bitwise(tmp_path):
    """bench/campaigns/faults.py on a small budget: a run killed with SIGKILL in each phase (the
    compile
    aside: minutes) resumes to the uninterrupted run's final state and evaluations, bit for
    bit; and the comparison tells a different run apart."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository: bench
    from bench.campaigns import faults
    phases = ("collect", "update", "evaluate", "checkpoint", "chunk")
    result = faults.campaign(len(phases), seed=1, total_steps=800, phases=phases, work=tmp_path)
    assert [r["phase"] for r in result["runs"]] == list(phases)
    assert result["killed"] == result["survived"] == len(phases), result["runs"]
    final = faults._final(tmp_path / "reference-none")
    changed = ([x.clone() for x in final[0]], final[1])
    changed[0][-1].view(-1)[0] += 1e-6
    assert faults._same(final, final) and not faults._same(final, changed)
