"""One update of each preset at the W1 size (17/6 dims, batch 256, 256-wide networks: the residual
presets get 2 blocks of 256), eager and compiled, side by side in one run:

    pytest bench/benchmarks/test_presets.py --benchmark-only

The preset's update-to-data ratio is left out (each row is one gradient step), so the rows compare
what one step of each algorithm costs; CrossQ has no target network, DroQ draws dropout masks,
TQC compares every quantile with every target atom, SimBa and BRO run residual networks.
"""
import pytest
import torch

import funcsac
from bench.common.measure import synced
from bench.common.workloads import WORKLOADS, random_batch, stepper

PRESETS = ["sac", "redq", "droq", "tqc", "crossq", "simba", "bro"]


def preset_config(name, device):
    """The preset's agent settings at the W1 size (``workloads.WORKLOADS["mujoco"]``), the actor
    as wide as the critics."""
    obs_dim, act_dim, hidden = WORKLOADS["mujoco"][:3]
    return funcsac.TrainConfig(**{**funcsac.presets.preset(name), "hidden_sizes": hidden,
                                  "actor_hidden_sizes": (), "device": str(device)}
                               ).sac_config(obs_dim, act_dim)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("name", PRESETS)
def test_preset_update(benchmark, name, mode, device):
    torch._dynamo.reset()
    cfg = preset_config(name, device)
    fn = funcsac.update if mode == "eager" else torch.compile(funcsac.update, fullgraph=True)
    step = stepper(fn, funcsac.init_state(cfg, seed=0), random_batch(cfg))
    for _ in range(3):  # the compile, then warm-up
        step()
    benchmark.group = f"presets {device}"
    benchmark.extra_info.update(preset=name, mode=mode, workload="mujoco", device=str(device))
    benchmark.pedantic(synced(step, device), rounds=30 if mode == "eager" else 60, iterations=1,
                       warmup_rounds=2)
