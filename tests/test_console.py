"""What a run prints: one opening line, one plain line per evaluation and its summary, with no
progress-bar redraws where the output is not a terminal (a log file, a cluster job), and the
same lines with --no-progress."""
import os
import subprocess
import sys

import pytest

TINY = ["--env-id", "Pendulum-v1", "--total-steps", "400", "--learning-starts", "200",
        "--eval-every", "100", "--eval-episodes", "1", "--hidden-sizes", "16", "16",
        "--batch-size", "32", "--no-compile"]


def _piped(tmp_path, *flags) -> str:
    """``funcsac train`` with its stdout and stderr piped to a file, as a cluster job's are."""
    log = tmp_path / "log.txt"
    with open(log, "w") as out:
        subprocess.run([sys.executable, "-m", "funcsac", "train", "--run-dir",
                        str(tmp_path / "run"), *TINY, *flags], stdout=out,
                       stderr=subprocess.STDOUT, check=True, timeout=300,
                       env={**os.environ, "FUNCSAC_MKL_VENDOR_CHECK": "shipped"})
    return log.read_text()


@pytest.mark.parametrize("flags", [(), ("--no-progress",)])
def test_piped_output_is_plain_lines_one_per_evaluation(tmp_path, flags):
    text = _piped(tmp_path, *flags)
    assert "\r" not in text  # no bar redraws in a file
    lines = text.splitlines()
    evals = [line for line in lines if "eval return" in line and line.startswith("funcsac: step")]
    assert [line.split(":")[1].split("/")[0].strip() for line in evals] == [
        "step 100", "step 200", "step 300", "step 400"]
    assert all("env steps/s" in line and "elapsed" in line for line in evals)
    opening = lines[0]
    assert "sac (mlp 16x16, 2 critics) on Pendulum-v1" in opening and "cpu fp32" in opening
    assert "thread" in opening and str(tmp_path / "run") in opening
    assert len(lines) <= 15 + len(evals), text


def test_on_a_terminal_the_bar_says_its_phase_and_starts_its_rate_with_learning(tmp_path, capsys,
                                                                                 monkeypatch):
    import funcsac
    from helpers import TINY as SMALL

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    config = funcsac.TrainConfig(**{**SMALL, "progress": True, "env_id": "Pendulum-v1",
                                    "total_steps": 300, "learning_starts": 200,
                                    "eval_every": 300})
    funcsac.train(config, tmp_path / "run")
    err = capsys.readouterr().err
    assert "random actions:" in err and "learning:" in err
    assert err.index("random actions:") < err.index("learning:")
