"""Whole training runs side by side: funcsac (empty compile cache, warm cache, and with the peers'
learning rates) against Stable-Baselines3 SAC and sbx SAC, each library in its own process,
interleaved, on one machine. Needs the ``bench`` extra.

    python -m bench.campaigns.e2e --task pendulum --seeds 1 2 --json bench/results/e2e.json
    python -m bench.campaigns.e2e --summarize bench/results/e2e.json   # RESULTS.md, e2e.png

Wall time is the parent's clock around each child process (start to exit, imports included);
``learn s`` is the child's own training call; ``compile s`` is funcsac's first update.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common.results_md import machine, write_block
from bench.common.paths import RESULTS, child_env, python_module

ORDER = ("funcsac-cold", "sbx", "funcsac-warm", "sb3", "funcsac-lr3e-4")


def run_child(library: str, task: str, seed: int, env: dict) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        start = time.perf_counter()
        subprocess.run([*python_module("bench.campaigns.e2e_child"), library, task, str(seed),
                        out.name], check=True, env=child_env(env))
        wall = time.perf_counter() - start
        result = json.loads(Path(out.name).read_text())
    return {**result, "wall_s": wall}


def run_all(task: str, seeds, path: Path, names=ORDER) -> list:
    results = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as cache:  # empty for the cold run, then warm
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache,
                   "FUNCSAC_COMPILE_STORE": os.path.join(cache, "funcsac")}
            for name in (n for n in ORDER if n in names):
                library = name.replace("-cold", "").replace("-warm", "")
                result = run_child(library, task, seed, env)
                results.append({**result, "name": name})
                print(f"{name:16s} seed {seed}: {result['wall_s']:7.1f} s wall, return "
                      f"{result['final_return']:8.1f}", flush=True)
                path.write_text(json.dumps({"machine": machine(), "runs": results}, indent=1))
    return results


def _median(runs, key):
    values = [r[key] for r in runs]
    return statistics.median(values) if values else float("nan")


def summarize(path: Path) -> str:
    data = json.loads(path.read_text())
    runs = data["runs"]
    by = {}
    for r in runs:
        by.setdefault((r["task"], r["name"]), []).append(r)
    lines = ["## End to end: whole training runs", "",
             f"{data['machine']}; each library in its own process, interleaved, medians over "
             f"seeds {sorted({r['seed'] for r in runs})}; wall = process start to exit.", "",
             "| task | run | wall s | vs sbx | learn s | env steps/s | compile s | collect s | "
             "update s | eval s | checkpoint s | peak RSS MiB | final return (10 ep.) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (task, name), rs in sorted(by.items(), key=lambda kv: (kv[0][0], ORDER.index(kv[0][1]))):
        sbx = _median(by.get((task, "sbx"), []), "wall_s")
        wall = _median(rs, "wall_s")
        split = [statistics.median(r["split"].get(p, float("nan")) for r in rs)
                 for p in ("compile", "collect", "update", "eval", "checkpoint")]
        cells = [task, name, f"{wall:.1f}", f"{wall / sbx:.2f}", f"{_median(rs, 'learn_s'):.1f}",
                 f"{rs[0]['steps'] / _median(rs, 'learn_s'):.0f}",
                 *("-" if s != s else f"{s:.1f}" for s in split),
                 f"{_median(rs, 'peak_rss_mib'):.0f}", f"{_median(rs, 'final_return'):.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "![return against wall-clock seconds](e2e.png)"]
    _plot(by, RESULTS / "e2e.png")
    return "\n".join(lines)


def _plot(by, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tasks = sorted({t for t, _ in by})
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for (t, name), rs in by.items():
            if t != task:
                continue
            for i, r in enumerate(rs):
                xs, _, ys = zip(*r["curve"]) if r["curve"] else ((), (), ())
                ax.plot(xs, ys, marker="o", color=f"C{ORDER.index(name)}",
                        label=name if i == 0 else None)
        ax.set(title=task, xlabel="wall-clock seconds since process start", ylabel="eval return")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def write_results(section: str, results_md: Path = RESULTS / "RESULTS.md") -> None:
    write_block("e2e", section, results_md)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="pendulum", choices=("pendulum", "halfcheetah", "smoke"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--json", default=str(RESULTS / "e2e.json"))
    parser.add_argument("--runs", nargs="+", default=list(ORDER), choices=ORDER,
                        help="which runs (in this order whatever the order given)")
    parser.add_argument("--summarize", help="only summarize this JSON file")
    args = parser.parse_args(argv)
    path = Path(args.summarize or args.json)
    if not args.summarize:
        run_all(args.task, args.seeds, path, args.runs)
    write_results(summarize(path))


if __name__ == "__main__":
    main()
