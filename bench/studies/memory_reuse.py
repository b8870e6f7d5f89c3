"""Each preset's compiled gradient step with freed memory reused (``funcsac.reuse_freed_memory``)
and with glibc's ``malloc`` as shipped, each in a fresh process, the two alternated:

    python -m bench.studies.memory_reuse \
        [--presets sac:fp32,crossq:bf16,flashsac:bf16,simbav2-utd1:bf16] [--rounds 2] [--fixed]

A process compiles the preset's update at HalfCheetah's sizes (17/6, the preset's batch), calls it
3 times, then times 5 rounds of 20 calls: the median ms a call and the page faults a call (minor
faults over the 100 calls). Each call advances the state, as a run does; ``--fixed``: each call
takes the state ``init_state`` made and its output is dropped at once, as a benchmark loop may
do. Prints one line a process.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import resource
import statistics
import subprocess
import time
from bench.common.paths import child_env, python_module


def child(name: str, precision: str, reuse: bool, fixed: bool) -> str:
    import funcsac
    import torch
    from bench.common.workloads import random_batch
    torch.set_flush_denormal(True)
    if reuse and not funcsac.reuse_freed_memory():
        return "the C library is not glibc"
    settings = funcsac.TrainConfig(**{**funcsac.presets.preset(name, "HalfCheetah-v5"),
                                      "precision": precision})
    cfg = settings.sac_config(17, 6)
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg, settings.batch_size)
    fn = funcsac.compile_update(funcsac.update)
    for _ in range(3):
        out, _ = fn(state, batch)
        state = state if fixed else out
    del out
    times, start = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(20):
            if fixed:
                fn(state, batch)  # the output dropped at once
            else:
                state, _ = fn(state, batch)
        times.append((time.perf_counter() - t) / 20 * 1e3)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / 100
    return (f"{name} {precision} {'reused' if reuse else 'shipped'}"
            f"{', fixed state' if fixed else ''}: "
            f"{statistics.median(times):.2f} ms, {faults:,.0f} page faults a call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="sac:fp32,crossq:bf16,flashsac:bf16,"
                                             "simbav2-utd1:bf16")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--fixed", action="store_true", help="the same state every call")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, precision, mode = args.child
        print(child(name, precision, mode == "reused", args.fixed), flush=True)
        return
    for row in args.presets.split(","):
        for _ in range(args.rounds):
            for mode in ("shipped", "reused"):
                subprocess.run([*python_module(__spec__.name), "--child", *row.split(":"), mode]
                               + ["--fixed"] * args.fixed, check=True, env=child_env())


if __name__ == "__main__":
    main()
