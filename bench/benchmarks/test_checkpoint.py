"""Checkpoint cost with a full replay buffer of 1M HalfCheetah-v5 transitions (obs 17, act 6):
the incremental checkpoint (the rows added since the last one, at the default
``--checkpoint-every 5000``, plus the agent) against writing the whole buffer each time."""
import pytest
import torch

import funcsac
from funcsac.driver.replay.buffer import ReplayBuffer
from funcsac.driver.run.checkpoint import save_checkpoint, save_tensors, state_leaves
from funcsac.driver.replay.files import delete_unlisted_chunks, save_buffer

CAPACITY, EVERY, OBS, ACT = 1_000_000, 5_000, 17, 6


def _rows(n, seed):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randn(n, OBS, generator=g), "action": torch.rand(n, ACT, generator=g),
            "reward": torch.randn(n, generator=g), "next_obs": torch.randn(n, OBS, generator=g),
            "terminated": torch.zeros(n)}


@pytest.fixture(scope="module")
def full_buffer():
    buffer = ReplayBuffer(CAPACITY, OBS, ACT, "cpu")
    for i in range(CAPACITY // 100_000):
        buffer.add(_rows(100_000, i))
    return buffer


@pytest.mark.parametrize("layout", ["incremental", "whole-buffer"])
def test_checkpoint_full_buffer(benchmark, tmp_path, full_buffer, layout):
    state = funcsac.init_state(funcsac.SACConfig(obs_dim=OBS, act_dim=ACT), seed=0)
    manifest = save_buffer(tmp_path, 0, full_buffer, {})  # the first checkpoint writes it all
    rounds = iter(range(10**6))

    def incremental():
        nonlocal manifest
        full_buffer.add(_rows(EVERY, next(rounds)))
        manifest = save_buffer(tmp_path, 0, full_buffer, manifest)
        save_checkpoint(tmp_path / "checkpoint.pt", {"agent": state_leaves(state),
                                                     "buffers": [manifest]})
        delete_unlisted_chunks(tmp_path, [manifest])

    def whole():
        full_buffer.add(_rows(EVERY, next(rounds)))
        rows = full_buffer.rows(full_buffer.oldest, full_buffer.added)
        save_tensors(tmp_path / "checkpoint.pt", {"agent": state_leaves(state),
                                                  "buffer": rows})

    benchmark.group = "checkpoint-1M-halfcheetah"
    benchmark.pedantic(incremental if layout == "incremental" else whole, rounds=5,
                       iterations=1, warmup_rounds=1)
    size = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    benchmark.extra_info.update(layout=layout, checkpoint_every=EVERY, disk_bytes=size)
