"""Several gradient steps per call: ``update_many`` (a scan) against unrolled updates.

Run with a fresh compile cache to see cold compile times, e.g.
``TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) pytest bench/benchmarks/test_update_many.py
--benchmark-only``
(add ``--slow-compiles`` for the unrolled variant, whose compile takes minutes).
``extra_info`` holds the first call's time (compile included) and the time per gradient step."""
import pytest
import torch

import funcsac
from bench.common.measure import cold_first_call_s, synced
from bench.common.workloads import random_batch, stepper, workload_config


def _unrolled(state, batches):
    for i in range(batches.obs.shape[0]):
        state, metrics = funcsac.update(state, funcsac.Batch(*(x[i] for x in batches)))
    return state, metrics


@pytest.mark.parametrize("variant,utd", [("update", 1), ("scan", 5), ("scan", 20), ("unrolled", 5)])
def test_compile_and_step_time(benchmark, variant, utd, device, request):
    if variant == "unrolled" and not request.config.getoption("--slow-compiles"):
        pytest.skip("the unrolled UTD compile takes minutes: pass --slow-compiles")
    cfg = workload_config("small", device=str(device))
    state = funcsac.init_state(cfg, seed=0)
    batch = random_batch(cfg, batch_size=256 * utd)
    if variant == "update":
        fn = funcsac.update
    else:
        batch = funcsac.Batch(*(x.reshape(utd, 256, *x.shape[1:]) for x in batch))
        fn = funcsac.update_many if variant == "scan" else _unrolled
    torch._dynamo.reset()
    step = stepper(torch.compile(fn, fullgraph=True), state, batch)
    benchmark.extra_info.update(workload="update_many", variant=variant, utd=utd,
                                first_call_s=cold_first_call_s(step, device))
    benchmark.group = "update_many"
    benchmark.pedantic(synced(step, device), rounds=max(200 // utd, 10), iterations=1,
                       warmup_rounds=2)
    benchmark.extra_info["ms_per_gradient_step"] = 1e3 * benchmark.stats.stats.median / utd
