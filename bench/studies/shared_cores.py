"""Two runs side by side on one CPU: env steps per second of the learning phase of one
Pendulum-v1 run alone, and of each of two started together, under thread settings (torch's
defaults; the ``funcsac`` command's own choice, ``funcsac.accel.threads``; OpenMP's threads
waiting passively instead of spinning; one thread each), in one run of this script:

    python -m bench.studies.shared_cores [--steps 3000] [--out bench/results/shared_cores.json]

Each run: SAC's defaults (2 x 256 critics, batch 256), eager updates, learning from env step
1,000; its speed is the mean of metrics.csv's ``env_steps_per_s`` over the rows after learning
began. The environment variables of a setting are given to both runs of it."""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from bench.common.paths import RESULTS

# each setting's environment variables (None: unset); FUNCSAC_THREADS=fixed turns the command's
# own choice off
_UNSET = {"OMP_NUM_THREADS": None, "OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None}
SETTINGS = {
    "torch's defaults": {**_UNSET, "FUNCSAC_THREADS": "fixed"},
    "the command's choice": {**_UNSET, "FUNCSAC_THREADS": None},
    "passive waits": {**_UNSET, "OMP_WAIT_POLICY": "PASSIVE", "FUNCSAC_THREADS": "fixed"},
    "one thread each": {**_UNSET, "OMP_NUM_THREADS": "1", "FUNCSAC_THREADS": "fixed"},
}


def _env(setting: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in setting}
    return {**env, **{k: v for k, v in setting.items() if v is not None}}


def _start(run_dir: Path, steps: int, setting: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "funcsac", "train", "--env-id", "Pendulum-v1", "--total-steps",
         str(steps), "--learning-starts", "1000", "--log-every", "250", "--eval-every", "0",
         "--no-compile", "--no-progress", "--run-dir", str(run_dir)],
        env=_env(setting), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _speed(run_dir: Path) -> float:
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(float(r["step"])) > 1_250]
    return sum(float(r["env_steps_per_s"]) for r in rows) / len(rows)


def measure(steps: int) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, setting in SETTINGS.items():
            alone = Path(tmp, f"{name}-alone")
            _start(alone, steps, setting).wait()
            pair = [Path(tmp, f"{name}-{i}") for i in (0, 1)]
            for p in [_start(d, steps, setting) for d in pair]:
                p.wait()
            speeds = [_speed(d) for d in pair]
            out[name] = {"alone": _speed(alone), "beside": speeds}
    base = out["torch's defaults"]["alone"]
    for name, row in out.items():
        row["ratio"] = min(row["beside"]) / base
        print(f"{name}: alone {row['alone']:.0f} env steps/s, two together "
              f"{row['beside'][0]:.0f} and {row['beside'][1]:.0f} ({row['ratio']:.2f} of one "
              "alone with torch's defaults)", flush=True)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3_000)
    parser.add_argument("--out", default=str(RESULTS / "shared_cores.json"))
    args = parser.parse_args()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), "")
    result = {"cpu": cpu, "cores": len(os.sched_getaffinity(0)), **measure(args.steps)}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
