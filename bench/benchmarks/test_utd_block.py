"""One environment step of the UTD-20 presets (REDQ, DroQ) at the W1 size, compiled: the driver's
``update_many`` on 20 batches, beside the parts it is made of, in one run:

    pytest bench/benchmarks/test_utd_block.py --benchmark-only

``update_many`` runs 20 critic steps and then one actor and temperature step (rlpd's order), so
it should cost about ``20 * critic_step + (update - critic_step)``: the rows ``critic_step`` (the
update of a step whose actor is not due: one critic step and its polyak average) and ``update``
(a critic and an actor step) give both.
"""
import pytest
import torch

import funcsac
from bench.common.measure import synced
from bench.benchmarks.test_presets import preset_config
from bench.common.workloads import BATCH_SIZE, random_batch, stepper

PRESETS = ["redq", "droq"]


@pytest.mark.parametrize("part", ["update_many", "critic_step", "update"])
@pytest.mark.parametrize("name", PRESETS)
def test_utd_block(benchmark, name, part, device):
    torch._dynamo.reset()
    cfg = preset_config(name, device)
    utd = funcsac.presets.preset(name)["utd"]
    batch = random_batch(cfg, batch_size=BATCH_SIZE * (utd if part == "update_many" else 1))
    fn = {"update": funcsac.update, "critic_step": funcsac.critic_update,
          "update_many": funcsac.update_many}[part]
    if part == "update_many":
        batch = funcsac.Batch(*(x.reshape(utd, BATCH_SIZE, *x.shape[1:]) for x in batch))
    step = stepper(torch.compile(fn, fullgraph=True), funcsac.init_state(cfg, seed=0), batch)
    for _ in range(3):  # the compile, then warm-up
        step()
    benchmark.group = f"UTD block {name} {device}"
    benchmark.extra_info.update(preset=name, part=part, utd=utd, device=str(device),
                                funcsac=funcsac.__file__)
    benchmark.pedantic(synced(step, device), rounds=10 if part == "update_many" else 60,
                       iterations=1, warmup_rounds=1)
