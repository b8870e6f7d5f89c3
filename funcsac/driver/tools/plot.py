"""Learning curves from run directories, seeds pooled across them as a paper's figure pools them."""
from __future__ import annotations

import csv
import glob
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Dict, NamedTuple

import numpy as np

_VALUES = {"step", "seed", "return_mean", "return_std", "episode_length_mean"}
# settings that do not make a run another experiment: its seed, length, logging and compiling
# (and the agent's resolved settings, which follow from the others)
_NOT_THE_EXPERIMENT = {"seed", "num_seeds", "total_steps", "eval_episodes", "checkpoint_every",
                       "log_every", "compile", "compile_in_background", "progress",
                       "tensorboard", "wandb_project", "wandb_mode", "agent"}


def run_dirs_of(patterns) -> list:
    """The run directories that ``patterns`` (paths, or glob patterns where no such path
    exists) name, in order, each once."""
    dirs = []
    for pattern in patterns:
        literal = Path(pattern).exists() or not glob.has_magic(str(pattern))
        matches = [pattern] if literal else sorted(glob.glob(str(pattern)))
        if not matches:
            raise ValueError(f"{pattern} matches no run directory")
        dirs += [Path(m) for m in matches if Path(m) not in dirs]
    return dirs


def _experiment(run_dir: Path) -> tuple:
    """What makes ``run_dir`` an experiment of its own: its settings but the seed, the length and
    the logging (from its config.json; a directory without one is its own experiment)."""
    path = run_dir / "config.json"
    if not path.is_file():
        return (("run_dir", str(run_dir)),)
    settings = json.loads(path.read_text())
    return tuple(sorted((k, json.dumps(v)) for k, v in settings.items()
                        if k not in _NOT_THE_EXPERIMENT))


def _eval_rows(run_dir: Path) -> list:
    path = run_dir / "eval.csv"
    if not path.is_file():
        raise ValueError(f"{run_dir} has no eval.csv: is it a funcsac run directory?")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _name(members: list, settings: dict, differing: list) -> str:
    """An experiment's name among others: the settings that differ, where they are few and not the
    directory itself; else its directories' common name."""
    if 0 < len(differing) <= 3 and "run_dir" not in settings:
        return ", ".join(f"{k}={json.loads(settings[k]) if k in settings else None}"
                         for k in differing)
    names = [d.name for d in members]
    if len(names) == 1:
        return names[0]
    common = os.path.commonprefix(names).rstrip("-_ ")
    return common or f"{names[0]} and {len(names) - 1} more"


class Curve(NamedTuple):
    """One experiment's evaluation curve: at each env step of ``steps``, the mean over its seeds
    of each seed's mean return and their standard deviation (``spread``; with one seed, that
    seed's episodes'); ``seeds`` counts the distinct seeds, ``runs`` the run directories (a
    seed run twice is one seed, its runs averaged)."""

    steps: list
    mean: list
    spread: list
    seeds: int
    runs: int


def _run_seed(run_dir: Path) -> str:
    """A run's seed (config.json), else the directory itself (a seed of its own): the seed of
    its evaluation rows that have no ``seed`` column."""
    path = run_dir / "config.json"
    seed = json.loads(path.read_text()).get("seed") if path.is_file() else None
    return str(seed) if seed is not None else str(run_dir)


def read_curves(run_dirs) -> Dict[str, Curve]:
    """Eval curves of one run directory or several, ``{label: Curve}``.

    Directories whose settings differ only in seed, length or logging are one experiment (its
    evaluation schedule, ``eval_every``, is part of it): their seeds are pooled. One curve per
    experiment and sweep value. A label names the experiment among the others (the settings that
    tell them apart, or its directories' common name, numbered where two would share it; ``""``
    for one) and the sweep value."""
    dirs = [Path(run_dirs)] if isinstance(run_dirs, (str, Path)) else [Path(d) for d in run_dirs]
    experiments = defaultdict(list)
    for run_dir in dirs:
        experiments[_experiment(run_dir)].append(run_dir)
    differing = sorted(k for k in {k for key in experiments for k, _ in key}
                       if len({dict(key).get(k) for key in experiments}) > 1)
    names = {key: _name(members, dict(key), differing) if len(experiments) > 1 else ""
             for key, members in experiments.items()}
    shared = {n for n in names.values() if list(names.values()).count(n) > 1}
    for i, key in enumerate(names):  # experiments that would share a name are numbered
        if names[key] in shared:
            names[key] += f" [{i + 1}]"
    # label -> step -> seed -> [(return mean, return std) of each run of that seed]
    groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    runs = defaultdict(set)
    for key, members in experiments.items():
        setting = names[key]
        for run_dir in members:
            run_seed = _run_seed(run_dir)
            for r in _eval_rows(run_dir):
                sweep = ", ".join(f"{k}={v}" for k, v in r.items() if k not in _VALUES)
                label = f"{setting} ({sweep})" if setting and sweep else setting or sweep
                groups[label][int(float(r["step"]))][r.get("seed") or run_seed].append(
                    (float(r["return_mean"]), float(r["return_std"])))
                runs[label].add(run_dir)
    curves = {}
    for label, by_step in groups.items():
        steps = sorted(by_step)
        values = [np.array([np.mean(v, axis=0) for v in by_step[s].values()]) for s in steps]
        mean = [v[:, 0].mean() for v in values]
        spread = [v[:, 0].std() if len(v) > 1 else v[0, 1] for v in values]
        seeds = len({seed for s in steps for seed in by_step[s]})
        curves[label] = Curve(steps, mean, spread, seeds, len(runs[label]))
    return curves


def plot_runs(run_dirs, out_path) -> Path:
    """Eval return (mean, shaded spread) against env steps: one line per experiment and sweep
    value, seeds pooled across the directories (``read_curves``); ``run_dirs`` may hold glob
    patterns."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dirs = run_dirs_of(run_dirs)
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, (steps, mean, spread, seeds, runs) in read_curves(dirs).items():
        name = label or (dirs[0].name if len(dirs) == 1 else f"{runs} runs")
        counted = f"{seeds} seed{'s' * (seeds > 1)}"
        if label and runs > seeds:  # a seed run more than once: one seed, its runs averaged
            counted += f" in {runs} runs"
        ax.plot(steps, mean, marker="o", label=f"{name}, {counted}")
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
