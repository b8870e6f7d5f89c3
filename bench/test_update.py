"""funcsac.update eager vs compiled at the reference sizes.

Run: ``pytest bench/test_update.py --benchmark-only`` (the compiled case includes a cold compile in
its setup, reported separately as ``extra_info["compile_s"]``)."""
import time

import pytest
import torch

import funcsac
from workloads import WORKLOADS, random_batch, workload_config


def _stepper(fn, state, batch):
    box = [state]

    def step():
        box[0], metrics = fn(box[0], batch)
        return metrics

    return step


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_update(benchmark, workload, mode):
    cfg = workload_config(workload)
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg)
    fn = funcsac.update
    if mode == "compiled":
        torch._dynamo.reset()
        fn = torch.compile(funcsac.update, fullgraph=True)
        start = time.perf_counter()
        state, _ = fn(state, batch)
        benchmark.extra_info["compile_s"] = time.perf_counter() - start
    step = _stepper(fn, state, batch)
    for _ in range(10):
        step()
    benchmark.group = workload
    benchmark.pedantic(step, rounds=200, iterations=1, warmup_rounds=5)
