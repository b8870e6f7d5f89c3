"""Long runs: the compiled update's time and the process's resident memory at step 1,000 against
step 50,000 (``small`` sizes, a new batch each step from a pool). Slow arithmetic on denormal floats
or a leak would show here. Global flush-to-zero is switched off for this run, so only funcsac's own
handling of idle Adam moments counts.
``pytest bench/test_stability.py --benchmark-only`` (about a minute)."""
import statistics
import time

import pytest
import torch

import funcsac
from measure import synchronize
from workloads import random_batch, workload_config

STEPS, WINDOW = 50_000, 500


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.fixture
def no_global_flush():
    torch.set_flush_denormal(False)
    yield
    torch.set_flush_denormal(True)


def test_long_run(benchmark, device, no_global_flush):
    cfg = workload_config("small", device=str(device))
    pool = [random_batch(cfg, seed=s) for s in range(64)]
    fn = torch.compile(funcsac.update, fullgraph=True)
    box = [funcsac.init_state(cfg, seed=0)]
    info = benchmark.extra_info
    info.update(workload="stability", device=str(device), steps=STEPS)

    def step(i):
        box[0], _ = fn(box[0], pool[i % len(pool)])

    def window_ms(start):
        times = []
        for i in range(start, start + WINDOW):
            t = time.perf_counter()
            step(i)
            synchronize(device)
            times.append(time.perf_counter() - t)
        return 1e3 * statistics.median(times)

    for i in range(1000):
        step(i)
    info["ms_at_1k"], info["rss_mib_at_1k"] = window_ms(1000), _rss_mib()
    for i in range(1000 + WINDOW, STEPS - WINDOW):
        step(i)
    info["ms_at_50k"], info["rss_mib_at_50k"] = window_ms(STEPS - WINDOW), _rss_mib()
    benchmark.group = "stability"
    benchmark.pedantic(step, args=(STEPS,), rounds=WINDOW, iterations=1)
