"""What the eager update's second paths buy: gradients by plain autograd outside transforms
(``grads.grad_and_value``) against ``torch.func.grad_and_value``, and a plain ``Sequential`` run
layer by layer (``networks._run_plain``) against ``functional_call``. Each variant turns paths
off; medians of interleaved calls of the eager ``update``, HalfCheetah's sizes (17/6), batch 256.
(Up to commit cbb9442 it also measured the critics' batched products, since removed.)

    python -m bench.studies.paths [--calls 20] [--json bench/results/paths.json]
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import json
import statistics
import time

import funcsac
import torch
from funcsac import networks
from funcsac.accel import grads

from bench.common.results_md import machine
from bench.common.workloads import random_batch

CONFIGS = {  # name: flat settings
    "sac 2x256": dict(hidden_sizes=(256, 256)),
    "redq 10x256": dict(hidden_sizes=(256, 256), num_critics=10, num_target_critics=2,
                        actor_q_reduction="mean"),
    "droq 2x256": dict(hidden_sizes=(256, 256), critic_dropout=0.01, critic_layer_norm=True),
}
ALWAYS = grads.untransformed
NEVER = lambda: False  # noqa: E731  the path through torch.func everywhere
IS_PLAIN = networks._is_plain
VARIANTS = {  # name: (the gradients' check, which networks run layer by layer)
    "all": (ALWAYS, IS_PLAIN),
    "no plain autograd": (NEVER, IS_PLAIN),
    "functional_call only": (NEVER, lambda template: False),
}


def _median_ms(state, batch, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        funcsac.update(state, batch)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure(name: str, settings: dict, calls: int) -> dict:
    cfg = funcsac.SACConfig.of(obs_dim=17, act_dim=6, **settings)
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg)
    times = {v: [] for v in VARIANTS}
    try:
        for _ in range(5):  # interleaved rounds
            for variant, (grad, plain) in VARIANTS.items():
                grads.untransformed, networks._is_plain = grad, plain
                funcsac.update(state, batch)  # warm up
                times[variant].append(_median_ms(state, batch, calls))
    finally:
        grads.untransformed, networks._is_plain = ALWAYS, IS_PLAIN
    ms = {v: round(statistics.median(t), 3) for v, t in times.items()}
    return {"config": name, "ms": ms,
            "over_all": {v: round(t / ms["all"], 3) for v, t in ms.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    rows = [measure(name, settings, args.calls) for name, settings in CONFIGS.items()]
    print(f"CPU: {machine()}")
    print("| critics | " + " | ".join(VARIANTS) + " |")
    print("|---|" + "---|" * len(VARIANTS))
    for r in rows:
        print(f"| {r['config']} | " + " | ".join(
            f"{r['ms'][v]:.2f} ms ({r['over_all'][v]:.2f}x)" for v in VARIANTS) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
