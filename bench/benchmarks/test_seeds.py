"""Independent agents: 8 in one vmapped update against 8 sequential updates (``small`` sizes)."""
import pytest
import torch
import torch.utils._pytree as pytree

import funcsac
from bench.common.measure import synced
from bench.common.workloads import random_batch, stepper, workload_config

AGENTS = 8


def _stack(trees):
    return pytree.tree_map(lambda *x: torch.stack(x), *trees)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("layout", ["vmapped", "sequential"])
def test_seeds(benchmark, layout, mode, device):
    cfg = workload_config("small", device=str(device))
    states = [funcsac.init_state(cfg, seed=s) for s in range(AGENTS)]
    batches = [random_batch(cfg, seed=s) for s in range(AGENTS)]
    fn = torch.func.vmap(funcsac.update) if layout == "vmapped" else funcsac.update
    if mode == "compiled":
        torch._dynamo.reset()
        fn = torch.compile(fn, fullgraph=True)
    if layout == "vmapped":
        step = stepper(fn, _stack(states), _stack(batches))
    else:
        steps = [stepper(fn, s, b) for s, b in zip(states, batches)]

        def step():
            for one in steps:
                one()

    for _ in range(3):
        step()
    benchmark.group = f"seeds-{mode}"
    benchmark.pedantic(synced(step, device), rounds=50, iterations=1, warmup_rounds=2)
    benchmark.extra_info.update(workload="seeds", layout=layout, mode=mode, agents=AGENTS,
                                agent_updates_per_s=AGENTS / benchmark.stats.stats.median)
