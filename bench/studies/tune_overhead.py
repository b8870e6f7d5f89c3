"""Whole-sweep wall time: 4 configurations as a Ray Tune experiment (`funcsac tune`, one process
per trial) against the same 4 as one `--sweep` run (one process, one vmapped update); and the
time a new process takes to load a run and produce its first action.

    python -m bench.studies.tune_overhead [--total-steps 3000] [--compile]

Each command runs in its own process, one after the other; the ratio is what compares.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

VALUES = "1e-4,3e-4,1e-3,3e-3"


def timed(argv, env=None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--total-steps", type=int, default=3000)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    common = ["--env-id", "Pendulum-v1", "--total-steps", str(args.total_steps),
              "--learning-starts", "500", "--eval-every", str(args.total_steps // 2),
              "--eval-episodes", "2", "--compile" if args.compile else "--no-compile"]
    funcsac = [sys.executable, "-m", "funcsac"]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "FUNCSAC_COMPILE_STORE": os.path.join(tmp, "store")}
        sweep = timed(funcsac + ["train", "--run-dir", os.path.join(tmp, "sweep"), "--no-progress",
                                 "--sweep", f"critic_lr={VALUES}", *common], env)
        env["FUNCSAC_COMPILE_STORE"] = os.path.join(tmp, "store-tune")
        tune = timed(funcsac + ["tune", "--storage", tmp, "--name", "tune", "--num-samples", "1",
                                "--search", f"critic_lr=grid({VALUES})", *common], env)
        load = timed([sys.executable, "-c", (
            "import funcsac, numpy as np; "
            f"funcsac.load({os.path.join(tmp, 'sweep')!r})[0].act(np.zeros(3, np.float32))")])
        imports = timed([sys.executable, "-c", "import funcsac.driver, numpy"])
    print(f"CPU: {_cpu()}, {os.cpu_count()} cores; Pendulum-v1, {args.total_steps} steps, "
          f"{'compiled' if args.compile else 'eager'}, critic_lr in {VALUES}\n")
    print("| how | wall s | vs --sweep |\n|---|---|---|")
    print(f"| one process, `--sweep` (4 agents vmapped) | {sweep:.1f} | 1.00 |")
    print(f"| `funcsac tune`, 4 trials (local Ray, 2 CPUs) | {tune:.1f} | {tune / sweep:.2f} |")
    print(f"\nnew process: load a run and act once {load:.2f} s (of which imports {imports:.2f} s)")


def _cpu() -> str:
    with open("/proc/cpuinfo") as f:
        return next((line.split(":", 1)[1].strip() for line in f if "model name" in line), "?")


if __name__ == "__main__":
    main()
