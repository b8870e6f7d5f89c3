"""Learning with the replay-side features against plain SAC on Pendulum-v1: 3 seeds each (one
vmapped run per variant), the same seeds and settings otherwise.

    python -m bench.campaigns.replay_learning [--steps 12000] [--out bench/replay_runs]

Writes one run directory per variant, ``replay.png`` (``funcsac plot`` of all of them) and prints,
per variant and seed, the first evaluation step whose return reached -250.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import csv
from pathlib import Path

import funcsac
from funcsac.driver import plot_runs

VARIANTS = {"sac": {}, "n_step_3": {"n_step": 3}, "prioritized": {"prioritized": True},
            "normalized": {"normalize_obs": True, "scale_rewards": True}}


def first_reaching(run_dir: Path, threshold: float) -> dict:
    """Per seed, the first eval step whose mean return is >= threshold (None: never)."""
    first = {}
    with open(run_dir / "eval.csv", newline="") as f:
        for row in csv.DictReader(f):
            seed = int(row["seed"])
            first.setdefault(seed, None)
            if first[seed] is None and float(row["return_mean"]) >= threshold:
                first[seed] = int(row["step"])
    return first


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12_000)
    parser.add_argument("--out", default="bench/replay_runs")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.variants:
        cfg = funcsac.TrainConfig(total_steps=args.steps, learning_starts=1000, eval_every=1000,
                                  eval_episodes=5, checkpoint_every=0, num_seeds=3, seed=1,
                                  progress=False, **VARIANTS[name])
        funcsac.train(cfg, out / name, overwrite=True)
    runs = [out / name for name in args.variants]
    plot_runs(runs, out / "replay.png")
    print("| variant | first step reaching -250 (seeds 1, 2, 3) |\n|---|---|")
    for run in runs:
        print(f"| {run.name} | {', '.join(str(v) for v in first_reaching(run, -250).values())} |")


if __name__ == "__main__":
    main()
