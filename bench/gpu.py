"""What a GPU gives funcsac, in one short run (``bench/gpu.sh`` calls it after the CUDA tests):

    python bench/gpu.py OUT [--device cuda] [--rollout-s 240] [--tiny]

1. Updates: one gradient step, eager, compiled with CUDA graphs (``mode="reduce-overhead"``;
   CUDA only) and compiled, fp32 and bf16 (``--precision``), at W1 (17/6 dims, 256 x 256, batch
   256), Humanoid's sizes (348/17, 256 x 256) and two presets at their widths (crossq: critics
   1024 x 1024; simba: 2 blocks of 512, UTD 2), medians of 50 synchronised calls, in
   ``update_rows``' order until ``--updates-s`` has passed. ``OUT/updates.json``.
2. Training: ``funcsac.train`` on HalfCheetah-v5 with 10 seeds vmapped for ``--rollout-s``
   seconds, then 1 seed for a third of that (a callback stops each): env steps per second
   (aggregate over the seeds; over the whole run and over its second half, after the compile)
   and the evaluations. ``OUT/training.json``.
3. ``OUT/gpu.png``: the update times and the training curves.

``--tiny`` (the CPU dry run that the tests take): 16-wide networks, Pendulum-v1, 2 seeds, a few
seconds each.
"""
import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import funcsac
import torch

from measure import synced
from workloads import random_batch, stepper

# name: (obs_dim, act_dim, TrainConfig settings)
UPDATES = {
    "W1": (17, 6, {"hidden_sizes": (256, 256)}),
    "humanoid": (348, 17, {"hidden_sizes": (256, 256)}),
    "crossq": (17, 6, {**funcsac.presets.preset("crossq")}),
    "simba": (17, 6, {**funcsac.presets.preset("simba")}),
}
TINY_UPDATES = {"W1": (17, 6, {"hidden_sizes": (16, 16)})}


def update_rows(device: str, workloads: dict) -> list:
    """``(workload, precision, mode)`` in the order they are timed: each workload's eager and
    CUDA-graph steps in fp32 and bf16 first, the default compile after them."""
    graphs = ["cuda-graphs"] if device.startswith("cuda") else []
    first = [(w, p, m) for w in workloads for p in ("fp32", "bf16") for m in ["eager", *graphs]]
    return first + [(w, p, "compiled") for w in workloads for p in ("fp32", "bf16")]


def time_updates(device: str, workloads: dict, calls: int, budget_s: float) -> list:
    """One row per ``update_rows`` entry, until ``budget_s`` has passed: the median ms of
    ``calls`` synchronised calls and the seconds of the compile and warm-up."""
    modes = {"eager": None, "compiled": "default", "cuda-graphs": "reduce-overhead"}
    torch._dynamo.config.cache_size_limit = 64
    rows, start_all = [], time.perf_counter()
    for name, precision, mode in update_rows(device, workloads):
        if time.perf_counter() - start_all > budget_s:
            rows.append({"workload": name, "precision": precision, "mode": mode,
                         "skipped": "the updates' time budget was spent"})
            continue
        obs_dim, act_dim, settings = workloads[name]
        train = funcsac.TrainConfig(**{**settings, "precision": precision, "device": device})
        cfg = train.sac_config(obs_dim, act_dim)
        fn = (funcsac.update if modes[mode] is None else
              torch.compile(funcsac.update, fullgraph=True, mode=modes[mode]))
        step = synced(stepper(fn, funcsac.init_state(cfg, seed=0),
                              random_batch(cfg, train.batch_size)), torch.device(device))
        start = time.perf_counter()
        for _ in range(3):
            step()  # the compile, then warm-up
        warmup_s, times = time.perf_counter() - start, []
        for _ in range(calls):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        rows.append({"workload": name, "precision": precision, "mode": mode,
                     "ms": 1e3 * statistics.median(times), "warmup_s": warmup_s,
                     "batch": train.batch_size, "hidden": list(cfg.hidden_sizes),
                     "utd": train.utd})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def time_training(out: Path, device: str, env_id: str, seeds: int, budget_s: float,
                  tiny: bool) -> dict:
    """``funcsac.train`` of ``seeds`` vmapped agents stopped after ``budget_s`` seconds."""
    marks = []  # (seconds since the start, env step)
    start = time.perf_counter()

    def stop(report) -> bool:
        marks.append((time.perf_counter() - start, report.step))
        return marks[-1][0] > budget_s

    extra = {"hidden_sizes": (16, 16), "learning_starts": 200, "eval_every": 400,
             "eval_episodes": 1, "log_every": 100} if tiny else {
        "eval_every": 20_000, "eval_episodes": 3, "log_every": 1000}
    config = funcsac.TrainConfig(env_id=env_id, num_seeds=seeds, device=device,
                                 total_steps=10_000_000, progress=False, **extra)
    result = funcsac.train(config, out / f"run-{seeds}-seeds", callbacks=[stop])
    wall = time.perf_counter() - start
    half = next((m for m in marks if m[0] >= wall / 2), marks[-1])
    late = (marks[-1][1] - half[1]) / max(marks[-1][0] - half[0], 1e-9)
    return {"env_id": env_id, "seeds": seeds, "wall_s": wall, "env_steps": marks[-1][1],
            "aggregate_steps_per_s": seeds * marks[-1][1] / wall,
            "aggregate_steps_per_s_second_half": seeds * late,
            "evals": [[e.step, e.agent, e.return_mean] for e in result.evals]}


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
    parser.add_argument("--updates-s", type=float, default=180.0,
                        help="no update row starts after this many seconds")
    parser.add_argument("--rollout-s", type=float, default=150.0,
                        help="the 10-seed run's seconds (the 1-seed run's: a third)")
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = funcsac.platform.devices.check_device(args.device, "--device")
    header = {"device": (torch.cuda.get_device_name(device) if device.startswith("cuda")
                         else platform.processor() or "cpu"), "torch": torch.__version__}
    updates = time_updates(device, TINY_UPDATES if args.tiny else UPDATES,
                           5 if args.tiny else 50, args.updates_s)
    (args.out / "updates.json").write_text(json.dumps({**header, "rows": updates}, indent=1))
    env_id = "Pendulum-v1" if args.tiny else "HalfCheetah-v5"
    training = [time_training(args.out, device, env_id, seeds, budget, args.tiny)
                for seeds, budget in (((2, args.rollout_s), (1, args.rollout_s)) if args.tiny
                                      else ((10, args.rollout_s), (1, args.rollout_s / 3)))]
    (args.out / "training.json").write_text(json.dumps({**header, "runs": training}, indent=1))
    plot(args.out, updates, training)


if __name__ == "__main__":
    main()
