"""funcsac's eager update against the CleanRL-style imperative update (``imperative_sac.py``),
interleaved in one process (blocks of 20 updates each, alternating), medians and their ratio per
workload: ``python -m bench.studies.eager_ratio [--rounds 10]``.

Interleaving keeps this machine's drift (up to 30% between minutes) out of the ratio, which
back-to-back pytest-benchmark runs (``bench/benchmarks/test_update.py``) let in.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import statistics

import funcsac
import torch
from bench.peers.imperative_sac import ImperativeSAC
from bench.common.measure import median_us
from bench.common.results_md import machine
from bench.common.workloads import WORKLOADS, batch_fields, random_batch, stepper, workload_config

BLOCK = 20


def eager_steps(workload: str) -> dict:
    """``{"funcsac": step, "imperative": step}``: one eager update each on ``workload``."""
    cfg = workload_config(workload)
    batch = random_batch(cfg)
    torch.manual_seed(0)
    sac = ImperativeSAC(*WORKLOADS[workload])
    fields = batch_fields(batch)
    return {"funcsac": stepper(funcsac.update, funcsac.init_state(cfg, seed=0), batch),
            "imperative": lambda: sac.update(*fields)}


def interleaved_medians(steps: dict, rounds: int) -> dict:
    """Median seconds per call of each step: the median over ``rounds`` of each round's median
    of ``BLOCK`` calls, the steps taking turns within a round."""
    times = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            times[name].append(median_us(step, 3, BLOCK) / 1e6)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    print(f"{machine()}; {torch.get_num_threads()} threads; {args.rounds} rounds of {BLOCK}")
    print("| workload | funcsac eager ms | imperative eager ms | funcsac / imperative |")
    print("|---|---|---|---|")
    for workload in args.workloads.split(","):
        med = interleaved_medians(eager_steps(workload), args.rounds)
        print(f"| {workload} | {med['funcsac'] * 1e3:.2f} | {med['imperative'] * 1e3:.2f} | "
              f"{med['funcsac'] / med['imperative']:.2f} |")


if __name__ == "__main__":
    main()
