"""Long runs: is the compiled update as fast at step 50,000 as at step 1,000, and is the process's
resident memory flat? (``small`` sizes, a new batch each step from a pool.) Slow arithmetic on
denormal floats, or a leak, would show here. Global flush-to-zero is off for this run, so only
funcsac's own handling of idle Adam moments counts.

States are immutable, so the state of step 1,000 is kept and, at the end, updates from it and from
the state of step 50,000 are timed alternately: the machine's drift over the run does not enter
their ratio. ``pytest bench/benchmarks/test_stability.py --benchmark-only`` (about a minute)."""
import statistics

import pytest
import torch

import funcsac
from bench.common.measure import call_s
from bench.common.workloads import random_batch, workload_config

STEPS, EARLY, ROUNDS = 50_000, 1_000, 500


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
    state = funcsac.init_state(cfg, seed=0)
    for i in range(STEPS):
        if i == EARLY:
            early, rss_early = state, _rss_mib()
        state, _ = fn(state, pool[i % len(pool)])
    late, rss_late = state, _rss_mib()

    times = {"early": [], "late": []}
    for i in range(ROUNDS):
        for name, s in (("early", early), ("late", late)):
            times[name].append(call_s(lambda: fn(s, pool[i % len(pool)]), device))
    benchmark.extra_info.update(
        workload="stability", device=str(device), steps=STEPS, early_step=EARLY,
        ms_at_1k=1e3 * statistics.median(times["early"]),
        ms_at_50k=1e3 * statistics.median(times["late"]),
        rss_mib_at_1k=rss_early, rss_mib_at_50k=rss_late)
    benchmark.group = "stability"
    benchmark.pedantic(fn, args=(late, pool[0]), rounds=ROUNDS, iterations=1)
