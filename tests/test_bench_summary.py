"""bench/benchmarks/summarize.py turns pytest-benchmark JSON into the results table, targets and
chart."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))  # the repository: bench
from bench.benchmarks import summarize  # noqa: E402
from bench.common.results_md import write_block  # noqa: E402


def _bench(name, median, **info):
    return {"name": name, "stats": {"median": median}, "extra_info": info}


def test_summary_tables_ratios_and_targets(tmp_path):
    flops = 5.82e8
    data = {"machine_info": {"cpu": {"brand_raw": "Test CPU", "count": 2}}, "datetime": "today",
            "benchmarks": [
                _bench("peak", 0.001, workload="machine", gflops=200.0),
                _bench("a", 0.010, workload="mujoco", impl="imperative-eager", first_call_s=0.1,
                       peak_mib=3.0, flops=flops),
                _bench("b", 0.004, workload="mujoco", impl="funcsac-compiled", first_call_s=40.0,
                       warm_compile_s=1.5, peak_mib=2.0, flops=flops),
                _bench("c", 0.020, workload="redq", impl="funcsac-compiled", first_call_s=50.0,
                       warm_compile_s=3.0, peak_mib=9.0, flops=4 * flops),
                _bench("g", 0.004, workload="mujoco", impl="funcsac-stored", first_call_s=40.0,
                       warm_compile_s=1.5, peak_mib=2.0, flops=flops),
                _bench("h", 0.020, workload="redq", impl="funcsac-stored", first_call_s=50.0,
                       warm_compile_s=3.0, peak_mib=9.0, flops=4 * flops),
                _bench("j", 0.005, workload="mujoco", impl="jax-jit", first_call_s=2.0,
                       peak_mib=0.0, flops=flops),
                _bench("d", 0.002, workload="seeds", layout="vmapped", mode="compiled",
                       agent_updates_per_s=4000.0),
                _bench("e", 0.008, workload="seeds", layout="sequential", mode="compiled",
                       agent_updates_per_s=1000.0),
                _bench("f", 0.001, workload="stability", steps=50_000, ms_at_1k=1.0,
                       ms_at_50k=1.05, rss_mib_at_1k=500.0, rss_mib_at_50k=501.0),
            ]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    out, chart = tmp_path / "RESULTS.md", tmp_path / "chart.png"
    write_block("e2e", "## End to end\nold table", out)  # another script's section
    write_block("presets", "## Presets\nold table", out)
    write_block("presets", "## Presets\nnew table", out)  # replaced in place
    summarize.main([str(path), "--out", str(out), "--chart", str(chart)])
    text = out.read_text()
    assert text.endswith("<!-- e2e begin -->\n## End to end\nold table\n<!-- e2e end -->\n\n"
                         "<!-- presets begin -->\n## Presets\nnew table\n<!-- presets end -->\n")
    # mujoco: 10 ms / 4 ms = 2.5x speedup, below the 2.8x target; 582 MFLOP / 4 ms = 146 GFLOP/s
    assert ("| mujoco: funcsac compiled speedup vs imperative eager | >= 2.8 | 2.50 | missed |"
            in text)
    assert "| funcsac-compiled | 4.00 | 250 | 2.50 | 1.00 | 40.0 | 2.0 | 582 | 146 | 73 |" in text
    assert ("| 10 critics cost vs 2 (funcsac compiled, redq / mujoco) | <= 4 | 5.00 | missed |"
            in text)
    assert "| seeds: 8 vmapped vs 8 sequential throughput (compiled) | >= 3 | 4.00 | met |" in text
    assert "| mujoco: warm compile s (new process) | < 2 | 1.50 | met |" in text
    assert "| redq: cold compile s (new process) | < 20 | 50.00 | missed |" in text
    assert "| mujoco: funcsac compiled time vs JAX jit | <= 0.8 | 0.80 | met |" in text
    assert "| redq: funcsac compiled time vs JAX jit | <= 0.8 | - | - |" in text
    assert "| 50000 | 1.000 | 1.050 | 1.05 | 500 | 501 |" in text
    assert chart.stat().st_size > 0
