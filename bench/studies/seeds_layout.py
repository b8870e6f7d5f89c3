"""The campaign's layout question: N agents in one vmapped compiled update against the same
compiled update called for each agent in turn, at W1 (17/6 dims, 256 x 256, batch 256),
interleaved, medians of 7 rounds of 20 calls:

    python -m bench.studies.seeds_layout [--agents 3]
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import statistics

import funcsac  # before torch, as funcsac train
import torch
import torch.utils._pytree as pytree

from bench.common.measure import median_us
from bench.common.results_md import machine
from bench.common.workloads import random_batch, stepper, workload_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=3)
    agents = parser.parse_args().agents
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    cfg = workload_config("mujoco")
    states = [funcsac.init_state(cfg, seed=s) for s in range(agents)]
    batches = [random_batch(cfg, seed=s) for s in range(agents)]
    stack = lambda xs: pytree.tree_map(lambda *x: torch.stack(x), *xs)  # noqa: E731
    vmapped = stepper(torch.compile(torch.func.vmap(funcsac.update), fullgraph=True),
                      stack(states), stack(batches))
    one = torch.compile(funcsac.update, fullgraph=True)
    each = [stepper(one, s, b) for s, b in zip(states, batches)]

    def in_turn():
        for step in each:
            step()

    for _ in range(3):  # the compiles, then warm-up
        vmapped(), in_turn()
    times = {"vmapped": [], "in turn": []}
    for _ in range(7):
        times["vmapped"].append(median_us(vmapped, 2, 20) / 1e3)
        times["in turn"].append(median_us(in_turn, 2, 20) / 1e3)
    v, t = (statistics.median(times[k]) for k in ("vmapped", "in turn"))
    print(f"{machine()}: {agents} agents at W1, compiled, one gradient step of all: vmapped "
          f"{v:.2f} ms, in turn {t:.2f} ms ({t / agents:.2f} ms an agent); vmapped / in turn "
          f"{v / t:.2f}")


if __name__ == "__main__":
    main()
