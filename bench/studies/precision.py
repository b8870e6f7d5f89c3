"""Each preset's gradient step in fp32 and in bf16 (``--precision``) at its published widths,
eager and compiled, against its matrix-product FLOPs at the GEMM rate measured in the same run
for that precision:

    python -m bench.studies.precision [--presets sac,crossq,tqc,simba,simbav2,flashsac,bro]
                              [--precisions fp32,bf16] [--env-id HalfCheetah-v5] [--write]
                              [--profile]

Sizes: the preset's settings for the task (HalfCheetah-v5: 17 observations, 6 actions) and its
batch. A row is one gradient step (the actor's too); per env step is that times the preset's
``utd``. The bound: the step's product FLOPs (forward and backward, torch's formulas) over the
median rate of ``[batch, width] @ [width, width]`` at the preset's widest layer in that
precision, plus the step's least memory traffic at the streaming rate measured in the same run:
every tensor of the state (parameters, targets, Adam's moments, in fp32) read and written once,
and each trainable parameter's gradient written and read once (``state_traffic``); the
activations' traffic is not counted. Interleaved: each round times every row once; medians over
5 rounds. ``--write``
puts the table in bench/RESULTS.md. ``--profile``: instead of the table, where each row's compiled
step goes (torch.profiler over 10 steps, each inductor kernel named): the products, inductor's
fused kernels and the rest, and the largest ops.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import statistics

import torch.utils._pytree as pytree

import funcsac  # before torch, as funcsac train
import funcsac.platform.cpu
import torch
import torch._inductor.config

from bench.common.measure import count_flops, median_us
from bench.common.results_md import machine, write_block
from bench.common.workloads import random_batch, stepper

ROUNDS = 5


def preset_config(name: str, env_id: str, precision: str):
    """The preset's agent for ``env_id``'s task at HalfCheetah's sizes, and its train settings."""
    settings = funcsac.TrainConfig(**{**funcsac.presets.preset(name, env_id),
                                      "precision": precision})
    return settings.sac_config(17, 6), settings


def gemm_rate(rows: int, width: int, dtype) -> float:
    """GFLOP/s of ``[rows, width] @ [width, width]`` in ``dtype`` (median of 50 calls)."""
    a, b = torch.randn(rows, width, dtype=dtype), torch.randn(width, width, dtype=dtype)
    return 2 * rows * width * width / median_us(lambda: torch.mm(a, b), 5, 50) / 1e3


def state_traffic(state: funcsac.SACState) -> int:
    """Bytes a gradient step moves at least for its state: each floating tensor of ``state``
    read and written once (Adam's step, the targets' average) and a gradient for each entry of
    Adam's first moments written and read once."""
    floats = lambda tree: sum(x.numel() * x.element_size()  # noqa: E731
                              for x in pytree.tree_leaves(tree)
                              if isinstance(x, torch.Tensor) and x.is_floating_point())
    moments = floats([opt.mu for opt in (state.actor_opt, state.critic_opt, state.alpha_opt)])
    return 2 * floats(state) + 2 * moments


def stream_rate(megabytes: int = 64) -> float:
    """GB/s of ``c = a + b`` over fp32 tensors of ``megabytes`` each (3 tensors' bytes a call;
    median of 20 calls): the rate element-wise kernels stream memory at."""
    a, b, c = (torch.randn(megabytes * 2**18) for _ in range(3))
    return 3 * a.numel() * 4 / median_us(lambda: torch.add(a, b, out=c), 3, 20) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="sac,crossq,tqc,simba,simbav2,flashsac,bro")
    parser.add_argument("--precisions", default="fp32,bf16",
                        help="fp32 alone on a CPU without bf16 products (bf16 is emulated there)")
    parser.add_argument("--env-id", default="HalfCheetah-v5")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    torch._inductor.config.cpp.enable_kernel_profile = args.profile
    torch._dynamo.config.cache_size_limit = 64  # one compiled update per row
    rows, streams = {}, []
    for name in args.presets.split(","):
        for precision in args.precisions.split(","):
            cfg, settings = preset_config(name, args.env_id, precision)
            state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg, settings.batch_size)
            eager = stepper(funcsac.update, state, batch)
            compiled = stepper(torch.compile(funcsac.update, fullgraph=True), state, batch)
            for _ in range(3):
                compiled()  # the compile, then warm-up
            width = max(cfg.hidden_sizes + cfg.actor_hidden_sizes)
            rows[name, precision] = dict(
                cfg=cfg, utd=settings.utd, eager=eager, compiled=compiled, times=([], []),
                flops=count_flops(eager), shape=(settings.batch_size, width),
                dtype=torch.bfloat16 if precision == "bf16" else torch.float32, rates=[],
                traffic=state_traffic(state))
    if args.profile:
        for (name, precision), row in rows.items():
            print(f"{name} {precision}:\n{profile(row['compiled'])}")
        return
    for _ in range(ROUNDS):
        for row in rows.values():
            row["times"][0].append(median_us(row["eager"], 1, 3) / 1e3)
            row["times"][1].append(median_us(row["compiled"], 2, 10) / 1e3)
            row["rates"].append(gemm_rate(*row["shape"], row["dtype"]))
        streams.append(stream_rate())
    stream = statistics.median(streams)
    lines = [f"Each preset's gradient step at its published widths, HalfCheetah sizes (17/6), its "
             f"batch (`python -m bench.studies.precision --presets {args.presets} --precisions "
             f"{args.precisions}`; {machine()}, CPU "
             f"flags: {_bf16_flags()}; medians of {ROUNDS} interleaved rounds). Products: "
             "the step's product FLOPs at the GEMM rate measured for the widest layer's shape "
             "in that precision. Memory: the least bytes the step moves for its state (each "
             "parameter, target and Adam moment read and written once, each gradient written "
             f"and read once) at the {stream:.1f} GB/s that `c = a + b` streams fp32 memory "
             "here. Bound: products plus memory; per env step: compiled times utd.", "",
             "| preset | precision | eager ms | compiled ms | MFLOP | GEMM GFLOP/s | "
             "products ms | state MB moved | memory ms | compiled / products | "
             "compiled / bound | compiled ms per env step |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (name, precision), row in rows.items():
        eager, compiled = (statistics.median(t) for t in row["times"])
        rate = statistics.median(row["rates"])
        products, memory = row["flops"] / rate / 1e6, row["traffic"] / stream / 1e6
        lines.append(f"| {name} | {precision} | {eager:.1f} | {compiled:.2f} | "
                     f"{row['flops'] / 1e6:.0f} | {rate:.0f} | {products:.2f} | "
                     f"{row['traffic'] / 1e6:.0f} | {memory:.2f} | {compiled / products:.1f} | "
                     f"{compiled / (products + memory):.1f} | {compiled * row['utd']:.1f} |")
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_block("precision", table)


def profile(step, calls: int = 10, top: int = 12) -> str:
    """Milliseconds a call of ``step`` spends in matrix products, in inductor's fused kernels and
    elsewhere (self CPU time), and its ``top`` largest ops."""
    with torch.profiler.profile() as prof:
        for _ in range(calls):
            step()
    ops = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    groups = {"products": 0.0, "fused kernels": 0.0, "rest": 0.0}
    for op in ops:
        group = ("products" if op.key in ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm")
                 else "fused kernels" if "cpp_fused" in op.key else "rest")
        groups[group] += op.self_cpu_time_total / calls / 1e3
    lines = ["  " + ", ".join(f"{g} {ms:.2f} ms" for g, ms in groups.items())]
    lines += [f"  {op.self_cpu_time_total / calls / 1e3:7.3f} ms  x{op.count // calls:<4d} "
              f"{op.key[:100]}" for op in ops[:top]]
    return "\n".join(lines)


def _bf16_flags() -> str:
    flags = funcsac.platform.cpu.cpu_description()["flags"].split()
    return ", ".join(f for f in ("avx512_bf16", "amx_bf16") if f in flags) or "no bf16 products"


if __name__ == "__main__":
    main()
