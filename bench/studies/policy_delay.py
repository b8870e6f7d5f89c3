"""CrossQ's update per env step (policy_delay 3, one gradient step an env step) computed whole at
every step, the actor's step kept or thrown away by ``torch.where`` (``update``), against the
whole update on the steps whose actor is due and its critic half on the others
(``funcsac.critic_update``), as the driver now calls them. HalfCheetah's sizes (17/6), batch 256;
medians of interleaved calls; eager, and compiled in process (``torch.compile``, fullgraph).

    python -m bench.studies.policy_delay [--widths 256 1024] [--calls 30]
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import json
import statistics
import time

import funcsac
import torch

from bench.common.results_md import machine
from bench.common.workloads import random_batch


def _median_ms(fn, state, batch, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(state, batch)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure(width: int, compiled: bool, calls: int) -> dict:
    cfg = funcsac.TrainConfig.from_dict({**funcsac.presets.preset("crossq"),
                                         "hidden_sizes": (width, width)}).sac_config(17, 6)
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg)
    full, half = funcsac.update, funcsac.critic_update
    if compiled:
        full, half = (torch.compile(f, fullgraph=True) for f in (full, half))
    for f in (full, half):  # warm up (and compile)
        f(state, batch)
    t_full, t_half = [], []
    for _ in range(5):  # interleaved rounds
        t_full.append(_median_ms(full, state, batch, calls))
        t_half.append(_median_ms(half, state, batch, calls))
    whole, critic = statistics.median(t_full), statistics.median(t_half)
    after = (whole + 2 * critic) / 3
    return {"width": width, "compiled": compiled, "update_ms": round(whole, 3),
            "critic_half_ms": round(critic, 3), "before_ms_per_env_step": round(whole, 3),
            "after_ms_per_env_step": round(after, 3), "after_over_before": round(after / whole, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--compiled-widths", type=int, nargs="*", default=[256])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    rows = [measure(w, False, args.calls) for w in args.widths]
    rows += [measure(w, True, args.calls) for w in args.compiled_widths]
    print(f"CPU: {machine()}")
    print("| critics | update | per env step before (whole, every step) | after (critic half "
          "2 of 3) | after / before |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| 2 x {r['width']} | {'compiled' if r['compiled'] else 'eager'} | "
              f"{r['before_ms_per_env_step']:.2f} ms | {r['after_ms_per_env_step']:.2f} ms | "
              f"{r['after_over_before']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
