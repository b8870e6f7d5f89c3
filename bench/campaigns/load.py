"""funcsac under load: a long run's resident memory and open file descriptors, and a Tune
sweep of more trials than cores.

    python -m bench.campaigns.load run --env-id HalfCheetah-v5 --total-steps 200000 \
        --json bench/results/load.json
    python -m bench.campaigns.load tune --trials 8 --json bench/results/load_tune.json

``run`` samples the process's resident memory (``VmRSS``) and its open descriptors every
``--every`` env steps (a training callback, at each row of metrics.csv): with a buffer of
``--buffer-size`` transitions, both should be flat once it is full. ``tune`` runs ``--trials``
trials on a local Ray instance of 2 CPUs, one CPU a trial, and checks that every trial finished
with all its evaluations reported, and that its last checkpoint (the run directory Tune keeps)
holds its eval.csv and loads at the last step.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import funcsac



def _resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def long_run(env_id: str, total_steps: int, buffer_size: int, every: int, run_dir: Path) -> dict:
    """One run of ``total_steps``, sampled every ``every`` env steps."""
    samples, start = [], time.perf_counter()

    def sample(report):
        if report.logs:
            samples.append({"step": report.step, "rss_mib": round(_resident_bytes() / 2 ** 20, 1),
                            "fds": len(os.listdir("/proc/self/fd")),
                            "wall_s": round(time.perf_counter() - start, 1)})
            print(samples[-1], flush=True)

    cfg = funcsac.TrainConfig(env_id=env_id, total_steps=total_steps, buffer_size=buffer_size,
                              log_every=every, eval_every=every * 5, progress=False)
    result = funcsac.train(cfg, run_dir, callbacks=[sample])
    full = [s for s in samples if s["step"] >= buffer_size]
    return {"env_id": env_id, "total_steps": total_steps, "buffer_size": buffer_size,
            "samples": samples, "final_return": result.evals[-1].return_mean,
            "after_full": {k: [min(s[k] for s in full), max(s[k] for s in full)]
                           for k in ("rss_mib", "fds")} if full else None}


def tune_sweep(trials: int, storage: Path) -> dict:
    """``trials`` trials of a short Pendulum-v1 run on 2 CPUs; what each left behind."""
    import ray
    from funcsac.driver.tools.tune import TuneSettings, run_tune, searches_of
    base = funcsac.TrainConfig(total_steps=3_000, learning_starts=500, eval_every=1_000,
                               eval_episodes=2, hidden_sizes=(64, 64), compile=False,
                               progress=False).to_dict()
    evals = base["total_steps"] // base["eval_every"]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        start = time.perf_counter()
        results = run_tune(TuneSettings(base, searches_of(["critic_lr=loguniform(1e-4,3e-3)"]),
                                        num_samples=trials, cpus_per_trial=1.0), storage, "load")
        wall = time.perf_counter() - start
    finally:
        ray.shutdown()
    rows = []
    for r in results:  # each trial's last checkpoint: its run directory as Tune kept it
        run_dir = Path(r.checkpoint.path) if r.checkpoint else Path(r.path) / "missing"
        rows_csv = (run_dir / "eval.csv").read_text().splitlines() if run_dir.is_dir() else []
        try:
            loaded = funcsac.load(run_dir).step
        except (ValueError, OSError) as e:
            loaded = f"not loaded: {e}"
        rows.append({"trial": Path(r.path).name, "error": None if r.error is None else str(r.error),
                     "reports": (r.metrics or {}).get("training_iteration"),
                     "eval_rows": len(rows_csv) - 1, "checkpoint_step": loaded})
    intact = sum(r["error"] is None and r["reports"] == evals and r["eval_rows"] == evals
                 and r["checkpoint_step"] == base["total_steps"] for r in rows)
    return {"trials": trials, "intact": intact, "wall_s": round(wall, 1), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    run = sub.add_parser("run")
    run.add_argument("--env-id", default="HalfCheetah-v5")
    run.add_argument("--total-steps", type=int, default=200_000)
    run.add_argument("--buffer-size", type=int, default=100_000)
    run.add_argument("--every", type=int, default=10_000)
    run.add_argument("--json", type=Path)
    tune = sub.add_parser("tune")
    tune.add_argument("--trials", type=int, default=8)
    tune.add_argument("--json", type=Path)
    args = parser.parse_args()
    from bench.common.results_md import machine
    with tempfile.TemporaryDirectory() as work:
        result = (long_run(args.env_id, args.total_steps, args.buffer_size, args.every,
                           Path(work) / "run") if args.what == "run"
                  else tune_sweep(args.trials, Path(work)))
    result = {"machine": machine(), **result}
    print(json.dumps({k: v for k, v in result.items() if k not in ("samples", "rows")}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
