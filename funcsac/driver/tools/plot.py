"""Learning curves from run directories."""
from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np

_VALUES = {"step", "seed", "return_mean", "return_std", "episode_length_mean"}


def read_curves(run_dir) -> dict:
    """Eval curves of a run: ``{label: (steps, mean, spread)}``. One curve per sweep value; with
    several seeds, mean and standard deviation across seeds, else the episodes' std."""
    path = Path(run_dir) / "eval.csv"
    if not path.is_file():
        raise ValueError(f"{run_dir} has no eval.csv: is it a funcsac run directory?")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        label = ", ".join(f"{k}={v}" for k, v in r.items() if k not in _VALUES)
        groups[label][int(float(r["step"]))].append((float(r["return_mean"]),
                                                     float(r["return_std"])))
    curves = {}
    for label, by_step in groups.items():
        steps = sorted(by_step)
        values = [np.array(by_step[s]) for s in steps]
        mean = [v[:, 0].mean() for v in values]
        spread = [v[:, 0].std() if len(v) > 1 else v[0, 1] for v in values]
        curves[label] = (steps, mean, spread)
    return curves


def plot_runs(run_dirs, out_path) -> Path:
    """Eval return (mean, shaded spread) against env steps, one line per run and sweep value."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for run_dir in run_dirs:
        for label, (steps, mean, spread) in read_curves(run_dir).items():
            name = Path(run_dir).name + (f" ({label})" if label else "")
            ax.plot(steps, mean, marker="o", label=name)
            ax.fill_between(steps, np.subtract(mean, spread), np.add(mean, spread), alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("eval return")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out_path = Path(out_path)
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path
