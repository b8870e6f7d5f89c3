"""What the benchmarks record beside wall time: first-call (compile) time, the peak memory one step
allocates, the matmul FLOPs of one step and the machine's fp32 matmul throughput."""
import json
import os
import statistics
import tempfile
import time

import torch
from torch._inductor.utils import fresh_cache
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def synced(step, device: torch.device):
    """``step`` followed by a device synchronisation, so that wall time covers the work."""
    if device.type != "cuda":
        return step

    def run(*args):
        out = step(*args)
        synchronize(device)
        return out

    return run


def call_s(step, device: torch.device) -> float:
    """Seconds of one call of ``step``, device work included (a compile when it is the first)."""
    start = time.perf_counter()
    step()
    synchronize(device)
    return time.perf_counter() - start


def cold_first_call_s(step, device: torch.device) -> float:
    """``call_s`` of a first call with every compile cache empty, on disk and in memory."""
    with fresh_cache():
        return call_s(step, device)


def peak_step_mib(step, device: torch.device) -> float:
    """MiB allocated at the peak of one call of ``step``, above what was live before it (CUDA: the
    caching allocator's counters; CPU: the running total of the profiler's allocation events)."""
    if device.type == "cuda":
        synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        step()
        synchronize(device)
        return (torch.cuda.max_memory_allocated(device) - base) / 2**20
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        step()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    totals = [e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]"]
    return max([0, *totals]) / 2**20


class _FlopCounter(TorchDispatchMode):
    """Sums ``torch.utils.flop_counter``'s FLOP formulas over the ops it sees (without
    ``FlopCounterMode``'s module tracking, which tensordict modules trip over)."""

    total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.total += formula(*args, **kwargs, out_val=out)
        return out


def count_flops(step) -> int:
    """Floating-point operations of the matrix products in one (eager) call of ``step``."""
    with _FlopCounter() as counter:
        step()
    return counter.total


def matmul_gflops(device: torch.device, size: int, repeats: int = 20) -> float:
    """fp32 GFLOP/s of ``size x size @ size x size`` (median of ``repeats``)."""
    a, b = (torch.randn(size, size, device=device) for _ in range(2))
    times = [call_s(lambda: torch.mm(a, b), device) for _ in range(repeats + 3)][3:]
    return 2 * size**3 / statistics.median(times) / 1e9


def median_us(call, warmup: int, calls: int) -> float:
    """Median wall time of ``call()`` in microseconds over ``calls`` calls after ``warmup``."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e3
