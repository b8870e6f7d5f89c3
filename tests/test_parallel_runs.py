"""Data-parallel training runs (funcsac.driver.run.ranks) on CPU over gloo: two ranks started by
torchrun train one agent, each on its own environments and replay; a rank that dies ends the
other with a clear error and leaves the checkpoints a resume continues from."""
import subprocess
import sys
import time
from pathlib import Path

import torch

import funcsac
from funcsac.driver.run.checkpoint import load_checkpoint
from funcsac.parallel import state_digest
from helpers import free_port, rank_env, small_config, torchrun

TINY = ["--hidden-sizes", "16", "16", "--batch-size", "32", "--no-compile", "--no-progress",
        "--eval-episodes", "1"]


def agents_equal(a: dict, b: dict) -> bool:
    """Whether two checkpoints hold the same agent, bitwise."""
    a, b = a["agent"], b["agent"]  # the state's leaves
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def test_two_ranks_train_one_agent_on_their_own_envs(tmp_path):
    run = tmp_path / "run"
    done = torchrun(2, "-m", "funcsac", "train", "--preset", "flashsac-parallel",
                    "--env", "torch/Pendulum-v1", "--num-envs", "4", "--total-steps", "400",
                    "--learning-starts", "120", "--buffer-size", "1000", "--eval-every", "400",
                    *TINY, "--run-dir", run)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "x 2 ranks (data-parallel)" in done.stdout
    assert done.stdout.count("final eval return") == 1  # rank 0 reports
    first, second = (load_checkpoint(d / "checkpoint.pt") for d in (run, run / "ranks" / "1"))
    assert first["progress"]["env_step"] == second["progress"]["env_step"] == 400
    assert agents_equal(first, second)  # the normalisation statistics of both ranks' rows too
    assert (run / "eval.csv").exists() and not (run / "ranks" / "1" / "eval.csv").exists()
    seeds = [load_checkpoint(d / "checkpoint.pt")["envs"] for d in (run, run / "ranks" / "1")]
    assert not torch.equal(seeds[0]["th"], seeds[1]["th"])  # each rank its own envs


def test_a_process_group_set_up_by_the_caller_runs_the_ranks(tmp_path):
    done = torchrun(2, Path(__file__).parent / "parallel_worker.py", tmp_path, 200, "train",
                    cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = (load_checkpoint(d / "checkpoint.pt")
                     for d in (tmp_path / "run", tmp_path / "run" / "ranks" / "1"))
    assert first["progress"]["env_step"] == 200 and agents_equal(first, second)


def test_every_rank_starts_from_rank_zeros_state(tmp_path):
    """Ranks whose initialisations differ (here: their seeds; in practice another BLAS path's
    rounding of an orthogonal init) start from rank 0's state."""
    done = torchrun(2, Path(__file__).parent / "parallel_worker.py", tmp_path, 0,
                    "from_rank_zero", cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-3000:]
    digests = [torch.load(tmp_path / f"rank{r}.pt")["digests"] for r in (0, 1)]
    own = state_digest(funcsac.init_state(small_config(algorithm="crossq",
                                                        critic_batch_renorm=True), seed=0))
    assert torch.equal(digests[0], digests[1]) and torch.equal(digests[0], own)


def _start_ranks(run, steps: int, *extra):
    port = free_port()
    return [subprocess.Popen(
        [sys.executable, "-m", "funcsac", "train", "--env", "Pendulum-v1", "--total-steps",
         str(steps), "--learning-starts", "200", "--checkpoint-every", "500", "--eval-every",
         "100000", *TINY, "--run-dir", str(run), *extra], env=rank_env(2, rank, port),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]


def test_a_dead_rank_ends_the_other_and_the_checkpoints_resume(tmp_path):
    run = tmp_path / "run"
    ranks = _start_ranks(run, 100_000)
    try:
        deadline = time.monotonic() + 120
        while not (run / "ranks" / "1" / "checkpoint.pt").exists():
            assert time.monotonic() < deadline and ranks[1].poll() is None
            time.sleep(0.2)
        ranks[1].kill()
        _, err = ranks[0].communicate(timeout=120)
    finally:
        for p in ranks:
            p.kill()
            p.communicate()
    assert ranks[0].returncode == 1, err[-3000:]
    assert "another rank stopped" in err and "is intact" in err and "--resume" in err
    checkpoints = [load_checkpoint(d / "checkpoint.pt") for d in (run, run / "ranks" / "1")]
    assert checkpoints[0]["progress"]["env_step"] == checkpoints[1]["progress"]["env_step"]
    resumed = _start_ranks(run, checkpoints[0]["progress"]["env_step"] + 500, "--resume")
    for p in resumed:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    after = [load_checkpoint(d / "checkpoint.pt") for d in (run, run / "ranks" / "1")]
    assert after[0]["progress"]["env_step"] == checkpoints[0]["progress"]["env_step"] + 500
    assert agents_equal(*after)
