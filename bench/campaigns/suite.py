"""The MuJoCo campaign: funcsac (seeds vmapped in one process) and sbx (one process a seed) on
the same tasks, budget, networks and seeds, interleaved, with a report against published figures.

    python -m bench.campaigns.suite --budget 100000 \
        --tasks HalfCheetah-v5,Hopper-v5,Walker2d-v5,Ant-v5,Humanoid-v5 \
        --algos sac,crossq --num-seeds 3
    python -m bench.campaigns.suite --report   # the tables into RESULTS.md, results/suite.png

``--algos``: a preset, ``ALGO@sbx`` (funcsac at its sbx peer's settings) or an earlier form of a
preset (``suite_child.VARIANTS``), any with ``-bf16`` appended (the same run with ``--precision
bf16``).

Each finished run appends one JSON line to ``--results``; a rerun skips what is there. A funcsac
run that is interrupted (Ctrl-C, SIGTERM, a crash, the machine going away) continues from its
checkpoint in ``--runs-dir`` when the campaign is run again, its wall time summed over the
pieces; an sbx run starts again. ``--peers none`` runs funcsac's side alone, ``--peers only``
sbx's. ``--first-seed K --num-seeds N`` runs seeds K to K+N-1 as a row of their own, so a row
too long for one sitting runs a seed at a time; the report pools the rows of a task, algorithm
and budget, and a run whose seeds a finished row holds is refused.
Wall time is the parent's clock around each child process (imports included). Run nothing else
on the machine meanwhile: the wall times are the result.
"""
import argparse
import datetime
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.campaigns.published import (CLEANRL_SAC_1M, METHOD_OF_PRESET, MRQ, published_at_100k,
                       published_table)
from bench.common.results_md import cpu_of, machine, mean_std, write_block
from bench.campaigns.suite_child import PIECES, SBX, differs_from_sbx, peer_of, preset_and_settings
from bench.common.paths import RESULTS, child_env, python_module

STOP_TIMEOUT_S = 120  # how long an interrupted child may take to stop before it is killed


def key_of(row: dict) -> tuple:
    return row["library"], row["task"], row["algo"], row["budget"], tuple(row["seeds"])


def finished(results: Path) -> set:
    if not results.exists():
        return set()
    return {key_of(json.loads(line)) for line in results.read_text().splitlines() if line}


def refuse_overlap(key: tuple, done: set) -> None:
    """``SystemExit`` if a finished row of the same library, task, algorithm and budget holds
    one of ``key``'s seeds (the report pools a group's rows, so a seed may count once)."""
    for other in done:
        shared = set(other[4]) & set(key[4])
        if other[:4] == key[:4] and shared:
            sys.exit(f"suite: {key[0]} {key[2]} on {key[1]} at {key[3]:,} steps: seeds "
                     f"{sorted(shared)} are already in a finished row (seeds {list(other[4])}); "
                     f"choose seeds after them with --first-seed")


def run_child(args: list, run_dir: Path, flags: list, pieces: bool) -> dict:
    """``suite_child.py args RUN_DIR OUT flags`` in a child process; its result with the wall
    time. On an
    interruption the child is asked to stop (a funcsac run checkpoints) and this piece's wall
    time is kept in ``run_dir`` (``pieces``) before the interruption goes on."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        start = time.perf_counter()
        child = subprocess.Popen([*python_module("bench.campaigns.suite_child"), *args,
                                  str(run_dir), out.name, *flags], start_new_session=True,
                                 env=child_env())
        try:
            code = child.wait()
        except BaseException:
            child.send_signal(signal.SIGINT)  # funcsac checkpoints at its next step
            try:
                child.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:  # sbx may not stop on SIGINT; it restarts anyway
                child.kill()
                child.wait()
            raise
        finally:
            if pieces:
                path = run_dir / PIECES
                walls = json.loads(path.read_text()) if path.exists() else []
                path.write_text(json.dumps(walls + [time.perf_counter() - start]))
        if code != 0:
            raise RuntimeError(f"suite_child.py {' '.join(args)} exited with status {code}")
        result = json.loads(Path(out.name).read_text())
    walls = json.loads((run_dir / PIECES).read_text()) if pieces else [time.perf_counter() - start]
    return {**result, "wall_s": sum(walls), "pieces": len(walls)}


def campaign(args) -> None:
    done, results = finished(Path(args.results)), Path(args.results)
    for task in args.tasks:
        for algo in args.algos:
            seeds = list(range(args.first_seed, args.first_seed + args.num_seeds))
            jobs = [("funcsac", seeds)] if args.peers != "only" else []
            if args.peers != "none" and peer_of(algo) in SBX:
                jobs += [("sbx", [s]) for s in seeds]
            for library, which in jobs:
                row = {"library": library, "task": task,
                       "algo": algo if library == "funcsac" else peer_of(algo),
                       "budget": args.budget, "seeds": which}
                if key_of(row) in done:
                    continue
                refuse_overlap(key_of(row), done)
                name = (f"{library}-{task}-{row['algo']}-{args.budget}-seeds"
                        f"{'-'.join(map(str, which))}")
                extra = ["--eager"] if args.eager and library == "funcsac" else []
                print(f"suite: {name}", flush=True)
                run_dir = Path(args.runs_dir) / name
                if library == "sbx" and (run_dir / PIECES).exists():
                    (run_dir / PIECES).unlink()
                result = run_child([library, task, row["algo"], str(args.budget),
                                    ",".join(map(str, which))],
                                   run_dir, extra, pieces=library == "funcsac")
                row.update(result, machine=machine(), date=datetime.date.today().isoformat())
                with open(results, "a") as f:
                    f.write(json.dumps(row) + "\n")
                final = row["curve"][-1][2] if row["curve"] else []
                print(f"suite: {name}: {row['wall_s']:.0f} s, final returns "
                      f"{[round(r) for r in final]}", flush=True)


def published_figure(algo: str, task: str, budget: int) -> str:
    """The published figure a row stands beside: at 100k its preset's own method's (FlashSAC's
    for ``flashsac``), else MR.Q's at ``budget``; ``"-"`` where neither has one."""
    preset = preset_and_settings(algo)[0]
    own = published_at_100k(preset, task) if budget == 100_000 else None
    if own:
        return f"{own[1]:,} ({METHOD_OF_PRESET[preset][0]})"
    mrq = MRQ.get(task.split("-")[0], {}).get(budget)
    return f"{mrq:,} (MR.Q)" if mrq else "-"


def cpus(runs: list) -> list:
    """The CPUs ``runs`` ran on (``cpu_of`` their machines), each once, sorted."""
    return sorted({cpu_of(r["machine"]) for r in runs})


def cpu_cell(ours: list, theirs: list) -> str:
    """A row's CPU: the one all its runs ran on, else each side's (``funcsac: A; sbx: B``)."""
    if len(cpus(ours + theirs)) == 1:
        return cpus(ours)[0]
    return "; ".join(f"{name}: {' and '.join(cpus(runs))}"
                     for name, runs in (("funcsac", ours), ("sbx", theirs)) if runs)


def report(results: Path, image: Path) -> str:
    rows = [json.loads(line) for line in results.read_text().splitlines() if line]
    groups = {}
    for r in rows:
        groups.setdefault((r["budget"], r["task"], r["algo"], r["library"]), []).append(r)
    lines = ["## MuJoCo campaign", "",
             "2 cores each; a row's runs on the CPU it names (each side's, where its two "
             "sides ran on different CPUs). funcsac trains its seeds "
             "vmapped in one process (3 agents vmapped cost what the same compiled update "
             "costs called for each in turn: 1.00x on an Intel Xeon with AMX, 0.99x on an AMD "
             "EPYC with AVX-512, 1.02x on one with AVX2 only; `python -m "
             "bench.studies.seeds_layout "
             "--agents 3`), sbx one process a seed; same budget, 256x256 networks, "
             "batch 256, learning after 5,000 random steps (a preset with its own batch and "
             "start, as flashsac and bro, keeps them); final return: the last evaluation "
             "(10 deterministic episodes), mean ± std over seeds; wall: all processes of the "
             "row, and the wall time a seed costs against sbx's (`python -m "
             "bench.campaigns.suite`). "
             "Published: the row's own method's seed mean at 100k (FlashSAC's for flashsac, "
             "SAC's for sac), else MR.Q's at that budget; not measured here. A plain "
             "algorithm's row runs each library's own settings beside those shared ones, an "
             "`ALGO@sbx` row funcsac at its sbx peer's settings "
             "(`bench/campaigns/suite_child.py`'s "
             "`LIKE_SBX`), beside the same sbx rows; the last column says what differs "
             "between a row's two sides beyond those. A wall time marked \"machine shared\" is "
             "not given: other work shared the machine while the run ran.", ""]
    for budget in sorted({b for b, *_ in groups}):
        lines += [f"### {budget:,} steps", "",
                  "| task | algorithm | funcsac return | sbx return | funcsac wall s (seeds) | "
                  "sbx wall s (seeds) | wall a seed vs sbx | CPU | published (v4) | "
                  "what differs from sbx's side |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for (b, task, algo, library), rs in sorted(groups.items()):
            if b != budget or library != "funcsac":
                continue
            sbx = groups.get((b, task, peer_of(algo), "sbx"), [])
            ours = [x for r in rs for x in r["curve"][-1][2]]
            theirs = [r["curve"][-1][2][0] for r in sbx]
            wall, sbx_wall = sum(r["wall_s"] for r in rs), sum(r["wall_s"] for r in sbx)
            # funcsac's seeds share one process: compare the wall time a seed costs, on one CPU
            same_cpu = sbx and len(cpus(rs + sbx)) == 1
            # other work ran beside (either side: the ratio is not given)
            ours_shared = any(r.get("shared_machine") for r in rs)
            theirs_shared = any(r.get("shared_machine") for r in sbx)
            shared = ours_shared or theirs_shared
            ratio = (wall / len(ours)) / (sbx_wall / len(theirs)) if same_cpu else None
            published = published_figure(algo, task, budget)
            cells = [task, algo, mean_std(ours), mean_std(theirs),
                     "- (machine shared)" if ours_shared else f"{wall:,.0f} ({len(ours)})",
                     "-" if not sbx else "- (machine shared)" if theirs_shared
                     else f"{sbx_wall:,.0f} ({len(theirs)})",
                     "-" if shared or not sbx else f"{ratio:.2f}" if same_cpu
                     else "- (another CPU)",
                     cpu_cell(rs, sbx),
                     published, differs_from_sbx(algo)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["### Published at 100,000 steps", "",
              "Seed means at the evaluation nearest 100,000 steps (in brackets the lowest and "
              "highest seed, where the file gives each seed), from the authors' result files, "
              "Gymnasium MuJoCo v4; not measured here.", "", published_table(), "",
              "CleanRL's SAC at 1M steps (published, MuJoCo v4): " + ", ".join(
                  f"{k} {v:,}" for k, v in CLEANRL_SAC_1M.items()) + "."]
    lines += ["", f"![return against env steps and wall-clock seconds]({image.name})"]
    plot(groups, image)
    return "\n".join(lines)


def plot(groups: dict, out: Path) -> None:
    """Return against env steps (top) and wall-clock seconds (bottom), one column a task: the
    mean over seeds, their range shaded."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    tasks = sorted({(b, t) for b, t, *_ in groups})
    fig, axes = plt.subplots(2, len(tasks), figsize=(5 * len(tasks), 7), squeeze=False)
    for column, (budget, task) in enumerate(tasks):
        runs = {(a, lib): rs for (b, t, a, lib), rs in groups.items() if (b, t) == (budget, task)}
        for i, ((algo, library), rs) in enumerate(sorted(runs.items())):
            steps = sorted({row[1] for r in rs for row in r["curve"]})
            by_step = {s: [x for r in rs for row in r["curve"] if row[1] == s for x in row[2]]
                       for s in steps}
            wall = [np.mean([row[0] for r in rs for row in r["curve"] if row[1] == s])
                    for s in steps]
            mean = np.array([np.mean(by_step[s]) for s in steps])
            low = np.array([np.min(by_step[s]) for s in steps])
            high = np.array([np.max(by_step[s]) for s in steps])
            for ax, xs in ((axes[0][column], steps), (axes[1][column], wall)):
                ax.plot(xs, mean, marker="o", color=f"C{i}", label=f"{library} {algo}")
                ax.fill_between(xs, low, high, color=f"C{i}", alpha=0.2)
        axes[0][column].set(title=f"{task}, {budget:,} steps", xlabel="env steps",
                            ylabel="eval return")
        axes[1][column].set(xlabel="wall-clock seconds (sbx: one seed's process)",
                            ylabel="eval return")
        for ax in axes[:, column]:
            ax.grid(alpha=0.3)
            ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--tasks", type=lambda s: s.split(","),
                        default=["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5",
                                 "Humanoid-v5"])
    parser.add_argument("--algos", type=lambda s: s.split(","), default=["sac", "crossq"])
    parser.add_argument("--num-seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=1,
                        help="seeds FIRST, FIRST+1, ...: a row's seeds can run in pieces of "
                             "seeds, each its own row, pooled in the report")
    parser.add_argument("--peers", choices=("sbx", "none", "only"), default="sbx",
                        help="sbx: funcsac's run and then sbx's; none: funcsac's alone; only: "
                             "sbx's alone (a row's sides can run in different sittings)")
    parser.add_argument("--results", default=str(RESULTS / "suite.jsonl"))
    parser.add_argument("--runs-dir", default="runs/suite")
    parser.add_argument("--eager", action="store_true", help="funcsac without compiling")
    parser.add_argument("--report", action="store_true", help="only write the report")
    parser.add_argument("--results-md", default=str(RESULTS / "RESULTS.md"),
                        help="the report's file (its curves beside it, suite.png)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a kill stops the child with a checkpoint too
    if not args.report:
        try:
            campaign(args)
        except KeyboardInterrupt:
            sys.exit("suite: interrupted; run the same command again to continue")
    md = Path(args.results_md)
    write_block("suite", report(Path(args.results), md.parent / "suite.png"), md)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    main()
