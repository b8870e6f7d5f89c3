"""funcsac against the imperative CleanRL-style update (bench/imperative_sac.py), side by side in
one run: ``pytest bench/test_references.py --benchmark-only``. Ratios in the issue notes are
medians of this run against ``imperative-eager``."""
import time

import pytest
import torch

import funcsac
from imperative_sac import ImperativeSAC
from workloads import WORKLOADS, random_batch, workload_config

IMPLEMENTATIONS = ["imperative-eager", "imperative-compiled", "funcsac-eager", "funcsac-compiled"]


def _step_fn(impl, workload):
    cfg = workload_config(workload)
    batch = random_batch(cfg)
    if impl.startswith("imperative"):
        torch.manual_seed(0)
        sac = ImperativeSAC(cfg.obs_dim, cfg.act_dim, cfg.hidden_sizes, cfg.num_critics,
                            cfg.num_target_critics)
        fn = sac.update
        if impl.endswith("compiled"):
            torch._dynamo.reset()
            fn = torch.compile(fn)
        return lambda: fn(*batch)
    box = [funcsac.init_state(cfg, seed=0)]
    fn = funcsac.update
    if impl.endswith("compiled"):
        torch._dynamo.reset()
        fn = torch.compile(fn, fullgraph=True)

    def step():
        box[0], metrics = fn(box[0], batch)
        return metrics

    return step


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_update_speed(benchmark, workload, impl):
    step = _step_fn(impl, workload)
    start = time.perf_counter()
    step()
    benchmark.extra_info["first_call_s"] = time.perf_counter() - start
    for _ in range(5):
        step()
    benchmark.group = workload
    benchmark.pedantic(step, rounds=100, iterations=1, warmup_rounds=3)
