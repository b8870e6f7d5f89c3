"""Each continuous preset on Pendulum-v1: 3 seeds (one vmapped run per preset), networks scaled to
2 CPU cores, and the first evaluation at which each seed reached -250.

    python -m bench.campaigns.preset_learning [--presets sac crossq ...] [--out bench/preset_runs]

The presets keep their algorithm, ratios and learning rates; the networks are 64 wide (SimBa and
BroNet: 2 blocks of 64 in the critics, 1 in the actor) and each preset runs for the env steps in
``STEPS`` (fewer at a high update-to-data ratio). Writes one run directory per preset,
``bench/results/presets.png`` (``funcsac plot`` of all of them) and the table, printed and in
``bench/results/RESULTS.md``.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import csv
import os
import platform
from pathlib import Path

import funcsac
from funcsac.driver import plot_runs
from funcsac.driver.run.checkpoint import load_checkpoint
from bench.campaigns.replay_learning import first_reaching
from bench.common.results_md import write_block
from bench.common.paths import RESULTS


STEPS = {"sac": 6000, "redq": 1500, "droq": 1500, "tqc": 8000, "crossq": 6000, "simba": 5000,
         "bro": 2000}
SCALED = {"simba": {"hidden_sizes": (64, 64), "actor_hidden_sizes": (32,)},
          "bro": {"hidden_sizes": (64, 64), "actor_hidden_sizes": (64,)},
          "tqc": {"batch_size": 128}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/preset_runs")
    parser.add_argument("--presets", nargs="+", default=list(STEPS))
    parser.add_argument("--report-only", action="store_true",
                        help="write the table from the runs already in --out")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in [] if args.report_only else args.presets:
        settings = {**funcsac.presets.preset(name), "hidden_sizes": (64, 64),
                    **SCALED.get(name, {}), "env_id": "Pendulum-v1", "total_steps": STEPS[name],
                    "learning_starts": 500 if STEPS[name] < 3000 else 1000,
                    "eval_every": 250 if STEPS[name] < 3000 else 1000, "eval_episodes": 5,
                    "checkpoint_every": 0, "num_seeds": 3, "seed": 1, "progress": False}
        funcsac.train(funcsac.TrainConfig.from_dict(settings), out / name, overwrite=True)
    runs = [out / name for name in args.presets]
    plot_runs(runs, RESULTS / "presets.png")
    lines = ["## Presets on Pendulum-v1 (3 vmapped seeds, 64-wide networks)", "",
             f"{_cpu()}; one run per preset; `python -m bench.campaigns.preset_learning`.", "",
             "| preset | env steps | first step reaching -250 (seeds 1, 2, 3) | final return "
             "(seeds 1, 2, 3) | training time |", "|---|---|---|---|---|"]
    for run in runs:
        first = ", ".join(str(v) for v in first_reaching(run, -250).values())
        final = ", ".join(f"{v:.0f}" for v in final_returns(run))
        lines.append(f"| {run.name} | {STEPS[run.name]} | {first} | {final} | "
                     f"{training_seconds(run):.0f} s |")
    lines += ["", "![eval return against env steps](presets.png)"]
    print("\n".join(lines))
    write_block("presets", "\n".join(lines))


def training_seconds(run_dir: Path) -> float:
    """The run's training time (compile included), from its checkpoint."""
    return float(load_checkpoint(run_dir / "checkpoint.pt")["progress"]["elapsed"])


def final_returns(run_dir: Path) -> list:
    """Each seed's last eval return."""
    with open(run_dir / "eval.csv", newline="") as f:
        last = {row["seed"]: float(row["return_mean"]) for row in csv.DictReader(f)}
    return list(last.values())


def _cpu() -> str:
    with open("/proc/cpuinfo") as f:
        name = next((line.split(":", 1)[1].strip() for line in f if "model name" in line),
                    platform.processor())
    return f"{name}, {os.cpu_count()} cores"


if __name__ == "__main__":
    main()
