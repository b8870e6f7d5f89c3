"""The tables of docs/reproduce.md, from the campaigns' results (``bench/results/suite.jsonl``,
``bench/results/discrete.jsonl``): each funcsac run as the ``funcsac train`` command that
repeats it, its budget and seeds, the returns it reached, its wall time (all seeds in one
process) on the CPU it ran on, and the published figure at that budget beside it.

    python -m bench.campaigns.reproduce      # rewrites the page's blocks from the results
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("FUNCSAC_MKL_VENDOR_CHECK", "auto")  # as suite_child's first import sets
from bench.campaigns.discrete import EVAL_EPISODES as DISCRETE_EPISODES  # noqa: E402
from bench.campaigns.discrete import EVAL_EVERY as DISCRETE_EVERY  # noqa: E402
from bench.campaigns.discrete import ZOO_DQN  # noqa: E402
from bench.campaigns.published import published_at_100k, published_table  # noqa: E402
from bench.common.results_md import cpu_of, mean_std, write_block  # noqa: E402
from bench.campaigns.suite_child import campaign_settings, preset_and_settings  # noqa: E402
from bench.common.paths import RESULTS, ROOT  # noqa: E402

PAGE = ROOT / "docs" / "reproduce.md"


def flags_of(settings: dict) -> list:
    """``funcsac train`` flags that set ``settings`` (TrainConfig fields): ``--name value``,
    ``--name v1 v2`` for tuples, ``--name``/``--no-name`` for booleans, ``none`` for None."""
    flags = []
    for name, value in settings.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + name.replace("_", "-"))
        elif isinstance(value, (tuple, list)):
            flags += [flag, *map(str, value)]
        else:
            flags += [flag, "none" if value is None else str(value)]
    return flags


def seeds_named(seeds: list) -> str:
    """Consecutive ``seeds`` as ``1-3`` (``2`` for one)."""
    return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"{seeds[0]}"


def mujoco_command(task: str, algo: str, budget: int, seeds: list) -> list:
    """The command of the campaign's funcsac run of ``algo`` on ``task`` with ``seeds``."""
    name, settings = preset_and_settings(algo)
    run_dir = (f"runs/{task.split('-')[0].lower()}-{algo.replace('@', '-at-')}-seeds"
               f"{seeds_named(seeds)}")
    return ["funcsac", "train", "--preset", name,
            *flags_of({**campaign_settings(task, algo, budget, seeds), **settings}),
            "--run-dir", run_dir]


def discrete_command(task: str, seeds: int) -> list:
    """The command of ``bench/campaigns/discrete.py``'s funcsac run on ``task`` (funcsac's
    defaults)."""
    return ["funcsac", "train", *flags_of({
        "env_id": task, "num_seeds": seeds, "total_steps": ZOO_DQN[task]["n_timesteps"],
        "eval_every": DISCRETE_EVERY, "eval_episodes": DISCRETE_EPISODES}),
        "--run-dir", f"runs/{task.split('-')[0].lower()}"]


def _rows(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _commands(rows: list) -> str:
    """A bash block of ``(comment, command)`` rows, each command wrapped at 96 columns between
    one flag with its values and the next."""
    lines = ["```bash"]
    for comment, command in rows:
        groups = []
        for word in command:
            if word.startswith("--") or not groups:
                groups.append(word)
            else:
                groups[-1] += " " + word
        lines.append(f"# {comment}")
        line = ""
        for group in groups:
            if line.strip() and len(line) + len(group) > 92:
                lines.append(line + " \\")
                line = "   "
            line += " " + group if line else group
        lines.append(line)
    return "\n".join(lines + ["```"])


def mujoco_table(results: Path) -> str:
    """One row per funcsac run of the MuJoCo campaign (by task, budget and algorithm), then
    their commands in the same order."""
    lines = ["| task | steps | algorithm | final return (seeds) | wall | CPU | "
             "published at 100k |", "|---|---|---|---|---|---|---|"]
    commands = []
    runs = sorted((r for r in _rows(results) if r["library"] == "funcsac"),
                  key=lambda r: (r["task"], r["budget"], r["algo"]))
    for r in runs:
        final = r["curve"][-1][2]
        wall = ("- (machine shared)" if r.get("shared_machine")
                else f"{r['wall_s'] / 60:,.0f} min")
        published = published_at_100k(preset_and_settings(r["algo"])[0], r["task"])
        cells = [r["task"], f"{r['budget']:,}", f"`{r['algo']}`",
                 f"{mean_std(final)} ({len(final)})", wall, cpu_of(r["machine"]),
                 f"{published[1]:,} ({published[0]})" if published and r["budget"] == 100_000
                 else "-"]
        lines.append("| " + " | ".join(cells) + " |")
        commands.append((f"{r['task']}, {r['algo']}, {r['budget']:,} steps (seeds "
                         f"{seeds_named(r['seeds'])})",
                         mujoco_command(r["task"], r["algo"], r["budget"], r["seeds"])))
    return "\n".join(lines) + "\n\n" + _commands(commands)


def discrete_table(results: Path) -> str:
    """One row per task of the discrete campaign at funcsac's defaults (its rows without
    flags), then the commands."""
    lines = ["| task | steps | best evaluation of each seed | final return | CPU |",
             "|---|---|---|---|---|"]
    commands = []
    rows = [r for r in _rows(results) if r["library"] == "funcsac" and not r.get("flags")]
    for task in ZOO_DQN:
        runs = sorted((r for r in rows if r["task"] == task), key=lambda r: r["seed"])
        if not runs:
            continue
        best = ", ".join(f"{max(v for _, v in r['curve']):,.0f}" for r in runs)
        final = [r["curve"][-1][1] for r in runs]
        lines.append(f"| {task} | {ZOO_DQN[task]['n_timesteps']:,} | {best} | "
                     f"{mean_std(final)} | {cpu_of(runs[0]['cpu'])} |")
        commands.append((f"{task}, {ZOO_DQN[task]['n_timesteps']:,} steps",
                         discrete_command(task, len(runs))))
    return "\n".join(lines) + "\n\n" + _commands(commands)


def main(argv=None) -> None:
    page = Path(argv[0]) if argv else PAGE
    write_block("mujoco", mujoco_table(RESULTS / "suite.jsonl"), page)
    write_block("published", published_table(), page)
    write_block("discrete", discrete_table(RESULTS / "discrete.jsonl"), page)


if __name__ == "__main__":
    main(sys.argv[1:])
