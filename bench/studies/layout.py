"""Each preset's compiled gradient step with its critics' wide Linear layers taking their products
weight first (``funcsac.accel.product_order.order_products``, the default on a CPU) against every
layer taking ``x @ W^T`` (``F.linear``), in one process, interleaved:

    python -m bench.studies.layout [--presets sac,crossq,tqc,simbav2,flashsac] [--precisions bf16]
                           [--min ENTRIES] [--dims 17,6] [--write]

Sizes as ``precision.py``'s: HalfCheetah-v5's (17 observations, 6 actions; ``--dims``: others),
each preset's widths and batch; a row is one gradient step (the actor's too). Medians of 5
rounds, each timing every row's two forms by the median of 10 calls. ``--min``: the
weight-first form with that threshold in place of ``WEIGHT_FIRST_MIN`` (0: every critic layer
weight first). ``--write`` puts the table in bench/RESULTS.md.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import math
import statistics

import funcsac  # before torch, as funcsac train
import funcsac.accel.product_order
import funcsac.state
import torch
from funcsac.accel.product_order import weight_first_linear

from bench.common.measure import median_us
from bench.common.results_md import machine, write_block
from bench.common.workloads import random_batch, stepper

ROUNDS = 5


def compiled_step(name: str, precision: str, threshold: float, dims=(17, 6)):
    """The preset's compiled gradient step at ``dims`` (observations, actions), its critics'
    products ordered as ``order_products`` orders them with ``WEIGHT_FIRST_MIN`` at
    ``threshold`` (``math.inf``: all by ``F.linear``); compiled and warmed up. Returns it and
    the number of layers marked."""
    settings = funcsac.TrainConfig(**{**funcsac.presets.preset(name, "HalfCheetah-v5"),
                                      "precision": precision})
    cfg = settings.sac_config(*dims)
    default = funcsac.accel.product_order.WEIGHT_FIRST_MIN
    funcsac.state.static_for.cache_clear()  # templates built afresh under the threshold below
    funcsac.accel.product_order.WEIGHT_FIRST_MIN = threshold
    try:
        state = funcsac.init_state(cfg, seed=0)
    finally:
        funcsac.accel.product_order.WEIGHT_FIRST_MIN = default
        funcsac.state.static_for.cache_clear()
    marked = sum(funcsac.accel.product_order.linear_of(m) is weight_first_linear
                 for m in state.static.critic.modules() if isinstance(m, torch.nn.Linear))
    step = stepper(torch.compile(funcsac.update, fullgraph=True), state,
                   random_batch(cfg, settings.batch_size))
    for _ in range(3):
        step()  # the compile, then warm-up
    return step, marked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="sac,crossq,tqc,simbav2,flashsac")
    parser.add_argument("--precisions", default="bf16")
    parser.add_argument("--min", type=float, default=funcsac.accel.product_order.WEIGHT_FIRST_MIN)
    parser.add_argument("--dims", type=lambda v: tuple(map(int, v.split(","))), default=(17, 6))
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    torch._dynamo.config.cache_size_limit = 64  # two compiled updates per row
    rows = {}
    for name in args.presets.split(","):
        for precision in args.precisions.split(","):
            first, marked = compiled_step(name, precision, args.min, args.dims)
            rows[name, precision] = dict(first=first, marked=marked, times=([], []),
                                         plain=compiled_step(name, precision, math.inf,
                                                             args.dims)[0])
    for _ in range(ROUNDS):
        for row in rows.values():
            row["times"][0].append(median_us(row["plain"], 2, 10) / 1e3)
            row["times"][1].append(median_us(row["first"], 2, 10) / 1e3)
    lines = [f"Each preset's compiled gradient step, its critics' products as `x @ W^T` for "
             f"every layer against weight first for the layers `order_products` marks "
             f"(`python -m bench.studies.layout --presets {args.presets} --precisions "
             f"{args.precisions} --min {args.min:g} --dims {args.dims[0]},{args.dims[1]}`; "
             f"{machine()}; each preset's widths and batch; medians of {ROUNDS} interleaved "
             "rounds).", "",
             "| preset | precision | layers marked | x @ W^T ms | weight first ms | speedup |",
             "|---|---|---|---|---|---|"]
    for (name, precision), row in rows.items():
        plain, first = (statistics.median(t) for t in row["times"])
        lines.append(f"| {name} | {precision} | {row['marked']} | {plain:.2f} | {first:.2f} | "
                     f"{plain / first:.2f}x |")
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_block("layout", table)


if __name__ == "__main__":
    main()
