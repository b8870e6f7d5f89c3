"""Wall time for SAC to reach an evaluation return on ``torch/Pendulum-v1`` with 1, 64 and 1,024
rows stepped on tensors (the parallel regime's settings scaled to a CPU):

    python -m bench.studies.time_to_return [--envs 1,64,1024] [--seeds 0,1,2] [--target -200]
        [--out bench/results/time_to_return.json]

Each run is ``funcsac train`` with SAC's defaults (256x256, batch 256, eager), 3-step returns,
``--gradient-steps`` 1, 8 and 16 a vector step (UTD 1, 1/8, 1/64), learning after 1,000, 1,024 and
2,048 env steps, a 5-episode evaluation every 1,000, 2,048 and 32,768 env steps (each 128
gradient steps or fewer apart), stopped at the first evaluation whose mean is at least
``--target``. A row gives the medians over seeds of the wall time (process start aside), the env
steps and the gradient steps to get there. Finished runs are kept in ``--out``, so the study
resumes where it stopped; run it alone on the machine.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the command's
import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from bench.common.results_md import machine
from funcsac import train
from funcsac.driver.config import TrainConfig

# rows -> (gradient steps a vector step, learning starts, evaluation interval), env steps
SETTINGS = {1: (1, 1000, 1000), 64: (8, 1024, 2048), 1024: (16, 2048, 32768)}
BUDGET = 60_000  # gradient steps after which a run that has not reached the target stops


def run(n: int, seed: int, target: float) -> dict:
    """One run of ``n`` rows until an evaluation reaches ``target``: its wall time, env steps,
    gradient steps and the return it reached (None where the budget ran out first)."""
    k, starts, every = SETTINGS[n]
    total = starts + BUDGET // k * n
    config = TrainConfig(env_id="torch/Pendulum-v1", num_envs=n, seed=seed, total_steps=total,
                         learning_starts=starts, gradient_steps=k, n_step=3, eval_every=every,
                         eval_episodes=5, checkpoint_every=0, compile=False, progress=False,
                         buffer_size=1_000_000)
    reached = {}

    def stop_at_target(report):
        if report.evals and report.evals[0].return_mean >= target and not reached:
            reached.update(step=report.step, seconds=time.perf_counter() - start,
                           value=report.evals[0].return_mean)
            return True
        return False

    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        result = train(config, run_dir, callbacks=[stop_at_target])
    step = reached.get("step", total)
    return {"envs": n, "seed": seed, "reached": result.stopped_early,
            "seconds": reached.get("seconds", time.perf_counter() - start),
            "env_steps": step, "gradient_steps": max(0, step - starts) // n * k,
            "return": reached.get("value", result.evals[-1].return_mean)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="1,64,1024")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--target", type=float, default=-200.0)
    parser.add_argument("--out", type=Path, default=Path("bench/results/time_to_return.json"))
    args = parser.parse_args()
    done = json.loads(args.out.read_text()) if args.out.exists() else {
        "machine": machine(), "target": args.target, "runs": []}
    for n in map(int, args.envs.split(",")):
        for seed in map(int, args.seeds.split(",")):
            if any(r["envs"] == n and r["seed"] == seed for r in done["runs"]):
                continue
            done["runs"].append(run(n, seed, args.target))
            args.out.write_text(json.dumps(done, indent=1))
            print(done["runs"][-1], flush=True)
    print(f"\nSAC on torch/Pendulum-v1 to an evaluation return of {done['target']:.0f} "
          f"({done['machine']}, torch threads {torch.get_num_threads()}); medians over seeds\n")
    print("| envs | gradient steps a vector step | seeds reached | seconds | env steps | "
          "gradient steps |\n|---|---|---|---|---|---|")
    for n in sorted({r["envs"] for r in done["runs"]}):
        rows = [r for r in done["runs"] if r["envs"] == n]
        med = lambda key: statistics.median(r[key] for r in rows)  # noqa: E731
        print(f"| {n:,} | {SETTINGS[n][0]} | {sum(r['reached'] for r in rows)}/{len(rows)} | "
              f"{med('seconds'):.0f} | {med('env_steps'):,.0f} | {med('gradient_steps'):,.0f} |")


if __name__ == "__main__":
    main()
