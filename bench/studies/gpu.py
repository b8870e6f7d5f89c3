"""What a GPU gives funcsac, in one short run (``bench/studies/gpu.sh`` calls it after the CUDA
tests):

    python -m bench.studies.gpu OUT [--device cuda] [--updates-s 150] [--rollout-s 150] [--tiny]

1. Updates: one gradient step, eager, compiled with CUDA graphs (``mode="reduce-overhead"``
   through ``funcsac.compile_update``; CUDA only) and compiled, fp32 and bf16 (``--precision``),
   at W1 (17/6 dims, 256 x 256, batch 256), three presets at their widths (flashsac, crossq,
   simbav2) and Humanoid's sizes (348/17, 256 x 256), medians of 50 synchronised calls, in
   ``update_rows``' order until ``--updates-s`` has passed; a row that fails records its error
   and the next one runs. ``OUT/updates.json``, rewritten after every row.
2. Training: ``funcsac.train`` on HalfCheetah-v5 with 10 seeds vmapped for ``--rollout-s``
   seconds, then 1 seed for a third of that (a callback stops each once it has evaluated): env
   steps per second (aggregate over the seeds; over the whole run and over its second half,
   after the compile) and the evaluations. ``OUT/training.json``, rewritten after each run.
3. Batched environments: env steps per second of ``torch/Pendulum-v1`` and, with the ``warp``
   extra, ``warp/HalfCheetah-v5`` (MuJoCo Warp) at 4,096 rows on the device, random actions.
   ``OUT/batched_envs.json``.
4. ``OUT/gpu.png``: the update times and the training curves.

``--tiny`` (the CPU dry run that the tests take): 16-wide networks, Pendulum-v1, 2 seeds, a few
seconds each; 4 batched rows.
"""
import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import funcsac
import torch

from bench.common.measure import synced
from bench.studies.batched_envs import make, steps_per_s
from bench.common.workloads import random_batch, stepper

# name: (obs_dim, act_dim, TrainConfig settings)
UPDATES = {
    "W1": (17, 6, {"hidden_sizes": (256, 256)}),
    **{name: (17, 6, funcsac.presets.preset(name)) for name in ("flashsac", "crossq", "simbav2")},
    "humanoid": (348, 17, {"hidden_sizes": (256, 256)}),
}
TINY_UPDATES = {"W1": (17, 6, {"hidden_sizes": (16, 16)})}


def update_rows(device: str, workloads: dict) -> list:
    """``(workload, precision, mode)`` in the order they are timed, the cheap and the telling
    first: every eager step (no compile), then the CUDA-graph steps in fp32, in bf16, then the
    default compile."""
    graphs = ["cuda-graphs"] if device.startswith("cuda") else []
    return ([(w, p, "eager") for w in workloads for p in ("fp32", "bf16")]
            + [(w, p, m) for m in [*graphs, "compiled"] for p in ("fp32", "bf16")
               for w in workloads])


def time_updates(device: str, workloads: dict, calls: int, budget_s: float, save) -> list:
    """One row per ``update_rows`` entry, until ``budget_s`` has passed: the median ms of
    ``calls`` synchronised calls and the seconds of the compile and warm-up, or the error that
    stopped the row; ``save(rows)`` after each."""
    modes = {"eager": None, "compiled": "default", "cuda-graphs": "reduce-overhead"}
    torch._dynamo.config.cache_size_limit = 64
    rows, start_all = [], time.perf_counter()
    for name, precision, mode in update_rows(device, workloads):
        row = {"workload": name, "precision": precision, "mode": mode}
        if time.perf_counter() - start_all > budget_s:
            row["skipped"] = "the updates' time budget was spent"
        else:
            try:
                row.update(time_update(device, *workloads[name], precision, modes[mode], calls))
            except Exception as error:  # a row's failure is a result; the next row still runs
                row["error"] = clipped(error)
        rows.append(row)
        print(json.dumps(rows[-1]), flush=True)
        save(rows)
    return rows


def clipped(error: Exception) -> str:
    """The error's type and message, its middle cut where longer than 3,000 characters (the
    cause of a compile's failure is often in its last lines)."""
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 3000 else f"{text[:1000]} [...] {text[-2000:]}"


def time_update(device: str, obs_dim: int, act_dim: int, settings: dict, precision: str,
                mode: str | None, calls: int) -> dict:
    """The median ms of ``calls`` synchronised gradient steps (eager where ``mode`` is None) and
    the seconds of the first three (the compile and the warm-up)."""
    train = funcsac.TrainConfig(**{**settings, "precision": precision, "device": device})
    cfg = train.sac_config(obs_dim, act_dim)
    fn = funcsac.update if mode is None else funcsac.compile_update(funcsac.update, mode=mode)
    step = synced(stepper(fn, funcsac.init_state(cfg, seed=0),
                          random_batch(cfg, train.batch_size)), torch.device(device))
    start = time.perf_counter()
    for _ in range(3):
        step()
    warmup_s, times = time.perf_counter() - start, []
    for _ in range(calls):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"ms": 1e3 * statistics.median(times), "warmup_s": warmup_s,
            "batch": train.batch_size, "hidden": list(cfg.hidden_sizes), "utd": train.utd}


def time_training(out: Path, device: str, env_id: str, seeds: int, budget_s: float,
                  tiny: bool) -> dict:
    """``funcsac.train`` of ``seeds`` vmapped agents stopped at the first record stage after
    ``budget_s`` seconds once it has evaluated (however slow the machine, the run has a curve)."""
    marks = []  # (seconds since the start, env step)
    evaluated = []
    start = time.perf_counter()

    def stop(report) -> bool:
        marks.append((time.perf_counter() - start, report.step))
        evaluated.extend(report.evals)
        return marks[-1][0] > budget_s and bool(evaluated)

    extra = {"hidden_sizes": (16, 16), "learning_starts": 200, "eval_every": 400,
             "eval_episodes": 1, "log_every": 100} if tiny else {
        "eval_every": 5_000, "eval_episodes": 1, "log_every": 1000}
    config = funcsac.TrainConfig(env_id=env_id, num_seeds=seeds, device=device,
                                 total_steps=10_000_000, progress=False, **extra)
    result = funcsac.train(config, out / f"run-{seeds}-seeds", callbacks=[stop])
    wall = time.perf_counter() - start
    evals = [[e.step, e.agent, e.return_mean] for e in result.evals]
    half = next((m for m in marks if m[0] >= wall / 2), marks[-1])
    late = (marks[-1][1] - half[1]) / max(marks[-1][0] - half[0], 1e-9)
    return {"env_id": env_id, "seeds": seeds, "wall_s": wall, "env_steps": marks[-1][1],
            "aggregate_steps_per_s": seeds * marks[-1][1] / wall,
            "aggregate_steps_per_s_second_half": seeds * late,
            "evals": evals}


def plot(out: Path, updates: list, training: list) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    timed = [r for r in updates if "ms" in r]
    left.barh([f"{r['workload']} {r['precision']} {r['mode']}" for r in timed],
              [r["ms"] for r in timed])
    left.set_xscale("log")
    left.set_xlabel("ms per gradient step")
    for run in training:
        by_seed = {}
        for step, agent, ret in run["evals"]:
            by_seed.setdefault(agent, []).append((step, ret))
        for seed, curve in by_seed.items():
            right.plot(*zip(*curve), alpha=0.6, label=f"{run['seeds']} seeds" if seed ==
                       min(by_seed) else None)
    right.set_xlabel("env steps (per seed)")
    right.set_ylabel("eval return")
    right.legend()
    fig.tight_layout()
    fig.savefig(out / "gpu.png", dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--updates-s", type=float, default=150.0,
                        help="no update row starts after this many seconds")
    parser.add_argument("--rollout-s", type=float, default=150.0,
                        help="the 10-seed run's seconds (the 1-seed run's: a third)")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--skip-updates", action="store_true", help="the training runs alone")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = funcsac.platform.devices.check_device(args.device, "--device")
    header = {"device": (torch.cuda.get_device_name(device) if device.startswith("cuda")
                         else platform.processor() or "cpu"), "torch": torch.__version__}
    updates = [] if args.skip_updates else time_updates(
        device, TINY_UPDATES if args.tiny else UPDATES, 5 if args.tiny else 50, args.updates_s,
        lambda rows: (args.out / "updates.json").write_text(
            json.dumps({**header, "rows": rows}, indent=1)))
    env_id = "Pendulum-v1" if args.tiny else "HalfCheetah-v5"
    training = []
    for seeds, budget in (((2, args.rollout_s), (1, args.rollout_s)) if args.tiny
                          else ((10, args.rollout_s), (1, args.rollout_s / 3))):
        try:
            training.append(time_training(args.out, device, env_id, seeds, budget, args.tiny))
        except Exception as error:  # recorded; the next run still goes
            training.append({"env_id": env_id, "seeds": seeds, "evals": [],
                             "error": clipped(error)})
        (args.out / "training.json").write_text(
            json.dumps({**header, "runs": training}, indent=1))
    (args.out / "batched_envs.json").write_text(json.dumps(
        {**header, "rows": batched_env_rows(device, 4 if args.tiny else 4096,
                                            3 if args.tiny else 100)}, indent=1))
    plot(args.out, updates, training)


def batched_env_rows(device: str, rows: int, steps: int) -> list:
    """Env steps per second of ``rows`` rows of each batched environment on ``device`` (an
    environment that cannot be made or stepped records its error)."""
    found = []
    for env_id in ("torch/Pendulum-v1", "warp/HalfCheetah-v5"):
        try:
            found.append({"env_id": env_id, "rows": rows,
                          "env_steps_per_s": steps_per_s(make(env_id, rows, device), steps)})
        except Exception as error:  # recorded; the next one still goes
            found.append({"env_id": env_id, "rows": rows, "error": clipped(error)})
        print(found[-1], flush=True)
    return found


if __name__ == "__main__":
    main()
