"""Summarise pytest-benchmark JSON files into a Markdown report and a bar chart.

    pytest bench/benchmarks --benchmark-only --benchmark-json bench/results/results.json
    python -m bench.benchmarks.summarize bench/results/results.json \
        --out bench/results/RESULTS.md --chart bench/results/results.png

Several files may be given (e.g. a rerun of one module): a later file's benchmark replaces an
earlier one of the same name.

Ratios compare medians from the same run. Targets (funcsac compiled against the imperative eager
update) are checked at the end.
"""
import argparse
import json
from collections import defaultdict
from pathlib import Path

from bench.common.results_md import blocks

UPDATE_WORKLOADS = ("mujoco", "small", "redq")
SPEEDUP_TARGETS = {"mujoco": 2.8, "small": 5.0, "redq": 3.3}
IMPL_ORDER = ("imperative-eager", "imperative-compiled", "torchrl-eager", "torchrl-compiled",
              "jax-jit", "funcsac-eager", "funcsac-compiled", "funcsac-stored",
              "funcsac-max-autotune", "funcsac-reduce-overhead")


def load(paths):
    """``(rows, machine)``: one dict per benchmark (median seconds plus its extra_info); the
    machine is that of the last file, with the dates of all runs."""
    rows, machine = {}, {}
    for path in paths:  # a later file's benchmark replaces an earlier one of the same name
        with open(path) as f:
            data = json.load(f)
        machine = {"cpu": data["machine_info"].get("cpu", {}).get("brand_raw", "?"),
                   "cores": data["machine_info"].get("cpu", {}).get("count", "?"),
                   "dates": [*machine.get("dates", []), data.get("datetime", "?")]}
        for b in data["benchmarks"]:
            rows[b["name"]] = {"name": b["name"], "median": b["stats"]["median"], **b["extra_info"]}
    return list(rows.values()), machine


def _fmt(x, spec=".2f", missing="-"):
    return missing if x is None else format(x, spec)


def _table(header, lines):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
    return "\n".join(out)


def update_tables(rows, peak_gflops):
    by = {(r["workload"], r["impl"]): r for r in rows if "impl" in r and r["workload"] in
          UPDATE_WORKLOADS}
    parts = []
    for w in UPDATE_WORKLOADS:
        base = by.get((w, "imperative-eager"))
        ours = by.get((w, "funcsac-compiled"))
        lines = []
        for impl in IMPL_ORDER:
            r = by.get((w, impl))
            if r is None:
                continue
            gflops = r["flops"] / r["median"] / 1e9
            lines.append([
                impl, _fmt(1e3 * r["median"]), _fmt(1 / r["median"], ".0f"),
                _fmt(base and base["median"] / r["median"]),
                _fmt(ours and r["median"] / ours["median"]),
                _fmt(r["first_call_s"], ".1f") if not impl.endswith("eager") else "-",
                _fmt(r.get("peak_mib"), ".1f"), _fmt(r["flops"] / 1e6, ".0f"),
                _fmt(gflops, ".0f"), _fmt(peak_gflops and 100 * gflops / peak_gflops, ".0f")])
        if lines:
            parts.append(f"### {w}\n\n" + _table(
                ["implementation", "median ms", "updates/s", "speedup vs imperative eager",
                 "time vs funcsac compiled", "first call s (cold compile)", "peak MiB",
                 "MFLOP/update", "GFLOP/s", "% of matmul peak"], lines))
    return "\n\n".join(parts), by


def losses_table(rows):
    by = defaultdict(dict)
    for r in rows:
        if r.get("workload") == "torchrl-loss":
            by[r["impl"]][r["passes"]] = r
    lines = [[impl, _fmt(1e3 * p["forward"]["median"]) if "forward" in p else "-",
              _fmt(1e3 * p["forward+backward"]["median"]) if "forward+backward" in p else "-",
              _fmt(max(x["first_call_s"] for x in p.values()), ".1f")
              if impl.endswith("compiled") else "-"]
             for impl, p in sorted(by.items())]
    return _table(["implementation", "forward ms", "forward+backward ms", "cold compile s"], lines)


def seeds_table(rows):
    by = {(r["layout"], r["mode"]): r for r in rows if r.get("workload") == "seeds"}
    lines, ratios = [], {}
    for mode in ("eager", "compiled"):
        v, s = by.get(("vmapped", mode)), by.get(("sequential", mode))
        if v and s:
            ratios[mode] = s["median"] / v["median"]
            lines.append([mode, _fmt(1e3 * v["median"]), _fmt(1e3 * s["median"]),
                          _fmt(v["agent_updates_per_s"], ".0f"),
                          _fmt(s["agent_updates_per_s"], ".0f"), _fmt(ratios[mode])])
    return _table(["mode", "8 vmapped ms", "8 sequential ms", "vmapped agent-updates/s",
                   "sequential agent-updates/s", "throughput ratio"], lines), ratios


def update_many_table(rows):
    lines = [[r["variant"], r["utd"], _fmt(r["first_call_s"], ".1f"),
              _fmt(r["ms_per_gradient_step"])]
             for r in rows if r.get("workload") == "update_many"]
    return _table(["variant", "UTD", "first call s (cold compile)", "ms per gradient step"], lines)


def stability_table(rows):
    lines = [[r["steps"], _fmt(r["ms_at_1k"], ".3f"), _fmt(r["ms_at_50k"], ".3f"),
              _fmt(r["ms_at_50k"] / r["ms_at_1k"]), _fmt(r["rss_mib_at_1k"], ".0f"),
              _fmt(r["rss_mib_at_50k"], ".0f")]
             for r in rows if r.get("workload") == "stability"]
    return _table(["steps", "ms/update at 1k", "ms/update at 50k", "ratio", "RSS MiB at 1k",
                   "RSS MiB at 50k"], lines)


def driver_rows(rows):
    """``{(num_envs, phase): ms}``: the driver's own cost per env step."""
    return {(r["num_envs"], r["phase"]): r["driver_ms_per_env_step"]
            for r in rows if "driver_ms_per_env_step" in r}


def driver_table(rows):
    lines = [[envs, phase, _fmt(ms, ".3f")]
             for (envs, phase), ms in sorted(driver_rows(rows).items())]
    return _table(["envs", "actions", "driver ms per env step"], lines)


def targets_table(by, seed_ratios, driver=None):
    def ratio(w, num, den):
        a, b = by.get((w, num)), by.get((w, den))
        return a and b and a["median"] / b["median"]

    checks = [(f"{w}: funcsac compiled speedup vs imperative eager", f">= {t}",
               ratio(w, "imperative-eager", "funcsac-compiled"), lambda x, t=t: x >= t)
              for w, t in SPEEDUP_TARGETS.items()]
    ten, two = by.get(("redq", "funcsac-compiled")), by.get(("mujoco", "funcsac-compiled"))
    checks.append(("10 critics cost vs 2 (funcsac compiled, redq / mujoco)", "<= 4",
                   ten and two and ten["median"] / two["median"], lambda x: x <= 4))
    checks.append(("seeds: 8 vmapped vs 8 sequential throughput (compiled)", ">= 3",
                   seed_ratios.get("compiled"), lambda x: x >= 3))
    for w in UPDATE_WORKLOADS:
        checks.append((f"{w}: funcsac compiled time vs JAX jit", "<= 0.8",
                       ratio(w, "funcsac-compiled", "jax-jit"), lambda x: x <= 0.8))
        checks.append((f"{w}: funcsac eager time vs imperative eager", "<= 1.2",
                       ratio(w, "funcsac-eager", "imperative-eager"), lambda x: x <= 1.2))
        r = by.get((w, "funcsac-stored"))
        cold = r and r.get("new_process_cold_s", r["first_call_s"])
        checks.append((f"{w}: cold compile s (new process)", "< 20", cold, lambda x: x < 20))
        checks.append((f"{w}: warm compile s (new process)", "< 2", r and r.get("warm_compile_s"),
                       lambda x: x < 2))
    for envs, goal in ((1, 0.3), (8, 0.1)):
        checks.append((f"driver ms per env step, {envs} env(s), policy acting", f"<= {goal}",
                       (driver or {}).get((envs, "policy")), lambda x, g=goal: x <= g))
    lines = [[name, target, _fmt(value),
              "-" if value is None else ("met" if ok(value) else "missed")]
             for name, target, value, ok in checks]
    return _table(["target", "goal", "measured", ""], lines)


def chart(by, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    impls = [i for i in IMPL_ORDER if any((w, i) in by for w in UPDATE_WORKLOADS)]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(len(impls), 1)
    for k, impl in enumerate(impls):
        xs, ys = [], []
        for j, w in enumerate(UPDATE_WORKLOADS):
            base, r = by.get((w, "imperative-eager")), by.get((w, impl))
            if base and r:
                xs.append(j + (k - (len(impls) - 1) / 2) * width)
                ys.append(base["median"] / r["median"])
        ax.bar(xs, ys, width, label=impl)
    for j, w in enumerate(UPDATE_WORKLOADS):
        ax.hlines(SPEEDUP_TARGETS[w], j - 0.4, j + 0.4, colors="k", linestyles="dashed")
    ax.set_xticks(range(len(UPDATE_WORKLOADS)), UPDATE_WORKLOADS)
    ax.set_ylabel("updates/s relative to imperative eager")
    ax.set_title("SAC update speed (dashed: funcsac compiled targets)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="pytest-benchmark --benchmark-json output")
    parser.add_argument("--out", default="bench/results/RESULTS.md")
    parser.add_argument("--chart", default="bench/results/results.png")
    args = parser.parse_args(argv)
    rows, machine = load(args.json)
    peak = next((r["gflops"] for r in rows if r.get("workload") == "machine"), None)
    updates, by = update_tables(rows, peak)
    seeds, seed_ratios = seeds_table(rows)
    sections = [
        "# Benchmark results",
        f"{machine.get('cpu')}, {machine.get('cores')} cores; runs of "
        f"{', '.join(machine.get('dates', []))}. Medians; each table's figures come from one run. "
        f"fp32 matmul peak measured with the update table: {_fmt(peak, '.0f')} GFLOP/s.",
        "## Targets", targets_table(by, seed_ratios, driver_rows(rows)),
        "## One update (critic + actor + temperature steps, polyak, Adam)", updates,
        "## TorchRL test_sac_speed sizes: the losses alone", losses_table(rows),
        "## Independent agents (small, 8 agents)", seeds,
        "## Several gradient steps per call (small)", update_many_table(rows),
        "## Long run (small, compiled)", stability_table(rows),
        "## The driver's own cost per env step (Pendulum-v1, collect stage minus envs.step)",
        driver_table(rows),
    ]
    sections += blocks(Path(args.out))  # the sections other scripts wrote (e2e, presets)
    with open(args.out, "w") as f:
        f.write("\n\n".join(sections) + "\n")
    chart(by, args.chart)


if __name__ == "__main__":
    main()
