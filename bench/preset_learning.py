"""Each continuous preset on Pendulum-v1: 3 seeds (one vmapped run per preset), networks scaled to
2 CPU cores, and the first evaluation at which each seed reached -250.

    python bench/preset_learning.py [--presets sac crossq ...] [--out bench/preset_runs]

The presets keep their algorithm, ratios and learning rates; the networks are 64 wide (SimBa and
BroNet: 2 blocks of 64 in the critics, 1 in the actor) and each preset runs for the env steps in
``STEPS`` (fewer at a high update-to-data ratio). Writes one run directory per preset,
``presets.png`` (``funcsac plot`` of all of them) and prints a markdown table.
"""
import argparse
import time
from pathlib import Path

import funcsac
from funcsac.driver import plot_runs
from replay_learning import first_reaching

STEPS = {"sac": 6000, "redq": 1500, "droq": 1500, "tqc": 8000, "crossq": 6000, "simba": 5000,
         "bro": 2000}
SCALED = {"simba": {"hidden_sizes": (64, 64), "actor_hidden_sizes": (32,)},
          "bro": {"hidden_sizes": (64, 64), "actor_hidden_sizes": (64,)},
          "tqc": {"batch_size": 128}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/preset_runs")
    parser.add_argument("--presets", nargs="+", default=list(STEPS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    for name in args.presets:
        settings = {**funcsac.presets.preset(name), "hidden_sizes": (64, 64),
                    **SCALED.get(name, {}), "env_id": "Pendulum-v1", "total_steps": STEPS[name],
                    "learning_starts": 500 if STEPS[name] < 3000 else 1000,
                    "eval_every": 250 if STEPS[name] < 3000 else 1000, "eval_episodes": 5,
                    "checkpoint_every": 0, "num_seeds": 3, "seed": 1, "progress": False}
        start = time.perf_counter()
        funcsac.train(funcsac.TrainConfig.from_dict(settings), out / name, overwrite=True)
        seconds[name] = time.perf_counter() - start
    runs = [out / name for name in args.presets]
    plot_runs(runs, out / "presets.png")
    print("| preset | env steps | first step reaching -250 (seeds 1, 2, 3) | wall time |")
    print("|---|---|---|---|")
    for run in runs:
        first = ", ".join(str(v) for v in first_reaching(run, -250).values())
        print(f"| {run.name} | {STEPS[run.name]} | {first} | {seconds[run.name]:.0f} s |")


if __name__ == "__main__":
    main()
