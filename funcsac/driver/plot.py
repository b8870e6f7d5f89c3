"""Learning curves from run directories."""
from __future__ import annotations

import csv
from pathlib import Path


def read_evals(run_dir) -> tuple:
    """``(steps, return_mean, return_std)`` lists from ``run_dir/eval.csv``."""
    path = Path(run_dir) / "eval.csv"
    if not path.is_file():
        raise ValueError(f"{run_dir} has no eval.csv: is it a funcsac run directory?")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return ([int(float(r["step"])) for r in rows], [float(r["return_mean"]) for r in rows],
            [float(r["return_std"]) for r in rows])


def plot_runs(run_dirs, out_path) -> Path:
    """Eval return (mean, shaded +- std over episodes) against env steps, one line per run."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for run_dir in run_dirs:
        steps, mean, std = read_evals(run_dir)
        ax.plot(steps, mean, marker="o", label=Path(run_dir).name)
        ax.fill_between(steps, [m - s for m, s in zip(mean, std)],
                        [m + s for m, s in zip(mean, std)], alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("eval return")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out_path = Path(out_path)
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path
