"""bench/studies/gpu.sh, the one-call GPU run, as its CPU dry run: the CUDA tests (skipped
here), the
update rows, two short training runs stopped by their time budget, the JSON and the PNG."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def test_the_gpu_script_dry_runs_on_the_cpu(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "gpu"
    subprocess.run(["bash", str(ROOT / "bench" / "studies" / "gpu.sh"), str(out), "--device", "cpu",
                    "--tiny", "--rollout-s", "4"], check=True, cwd=tmp_path, timeout=600,
                   env={**os.environ, "PYTHON": sys.executable})
    assert "skipped" in (out / "cuda-tests.txt").read_text().splitlines()[-1]
    rows = json.loads((out / "updates.json").read_text())["rows"]
    assert [(r["precision"], r["mode"]) for r in rows] == [
        ("fp32", "eager"), ("bf16", "eager"), ("fp32", "compiled"), ("bf16", "compiled")]
    assert all(r["ms"] > 0 for r in rows)
    runs = json.loads((out / "training.json").read_text())["runs"]
    assert [r["seeds"] for r in runs] == [2, 1]
    for run in runs:
        # stopped by the budget, long before the 10M steps it was given
        assert 0 < run["env_steps"] < 1_000_000 and run["aggregate_steps_per_s"] > 0
        assert {agent for _, agent, _ in run["evals"]} == set(range(run["seeds"]))
    batched = json.loads((out / "batched_envs.json").read_text())["rows"]
    assert [r["env_id"] for r in batched] == ["torch/Pendulum-v1", "warp/HalfCheetah-v5"]
    warp = importlib.util.find_spec("mujoco_warp") is not None
    assert all(r["env_steps_per_s"] > 0 for r in batched[:1 + warp]), batched
    assert (out / "gpu.png").stat().st_size > 0
