"""Prioritized replay's cost beside the update it feeds: the sum tree's sample and set of a batch at
capacity 1,000,000, per fan-out, and one compiled W1 update, in one run:

    pytest bench/benchmarks/test_priority.py --benchmark-only [--device cuda]

Rows: ``sample`` (256 stratified draws), ``set`` (256 random leaves), ``sample+set`` (the two as
a training step does them: draw, then write new priorities for the drawn leaves); ``replay step``
(a full buffer of W1-sized rows, the driver's work per env step at one update per step: add a row,
draw a batch, and, prioritized, queue the batch's new priorities), uniform and prioritized, whose
difference is what prioritized replay adds to a training step; ``update`` (a
``torch.compile(funcsac.update, fullgraph=True)`` step of the "mujoco" workload, batch 256; also
``update_with_aux`` and the update with normalisation on).
On a CPU shared with other processes, run with ``OMP_NUM_THREADS=1``: intra-op threads that wait
for a descheduled sibling made the medians 10 to 100 times the minima.
"""
import pytest
import torch

import funcsac
from funcsac import keys
from funcsac.driver.replay.buffer import ReplayBuffer, row_shapes
from funcsac.driver.replay.priority import PriorityTree
from bench.common.measure import synced
from bench.common.workloads import BATCH_SIZE, WORKLOADS, random_batch, stepper, workload_config

CAPACITY = 1_000_000
FANOUTS = [8, 32, 128]


def full_tree(device, fanout):
    """A tree of ``CAPACITY`` random positive priorities."""
    tree = PriorityTree(CAPACITY, device, fanout)
    g = torch.Generator().manual_seed(0)
    tree.load(torch.rand(CAPACITY, generator=g, dtype=torch.float64) + 1e-3)
    return tree


def cycling(key_list):
    """A no-argument function returning the next key of ``key_list`` (round robin)."""
    box = [0]

    def next_key():
        box[0] += 1
        return key_list[box[0] % len(key_list)]

    return next_key


def tree_step(op, device, fanout):
    tree = full_tree(device, fanout)
    next_key = cycling(list(keys.split(keys.make_key(0, device), 64)))
    g = torch.Generator().manual_seed(1)
    index = torch.randint(0, CAPACITY, (BATCH_SIZE,), generator=g).to(device)
    priority = (torch.rand(BATCH_SIZE, generator=g, dtype=torch.float64) + 1e-3).to(device)
    if op == "sample":
        return lambda: tree.sample(next_key(), BATCH_SIZE)
    if op == "set":
        return lambda: tree.set(index, priority)

    def sample_and_set():
        drawn, _ = tree.sample(next_key(), BATCH_SIZE)
        tree.set(drawn, priority)
    return sample_and_set


@pytest.mark.parametrize("fanout", FANOUTS)
@pytest.mark.parametrize("op", ["sample", "set", "sample+set"])
def test_priority_tree(benchmark, op, fanout, device):
    step = tree_step(op, device, fanout)
    benchmark.group = f"priority {device}"
    benchmark.extra_info.update(op=op, fanout=fanout, capacity=CAPACITY, batch=BATCH_SIZE,
                                device=str(device))
    benchmark.pedantic(synced(step, device), rounds=300, iterations=1, warmup_rounds=10)


@pytest.mark.parametrize("replay", ["uniform", "prioritized"])
def test_replay_step(benchmark, replay, device):
    obs_dim, act_dim = WORKLOADS["mujoco"][:2]
    buffer = ReplayBuffer(CAPACITY, obs_dim, act_dim, device,
                          priority=(0.6, 1e-6) if replay == "prioritized" else None)
    g = torch.Generator().manual_seed(0)
    fill = {k: torch.randn(CAPACITY, *shape, generator=g)
            for k, shape in row_shapes(obs_dim, act_dim).items()}
    buffer.add(fill)
    if buffer.tree is not None:
        buffer.set_priorities(torch.arange(CAPACITY, device=device), fill["reward"].to(device))
    row = {k: v[:1] for k, v in fill.items()}
    td = torch.rand(BATCH_SIZE, generator=g).to(device)
    next_key = cycling(list(keys.split(keys.make_key(0, device), 64)))

    def step():
        buffer.add(row)
        batch, where = buffer.sample(next_key(), BATCH_SIZE)
        if buffer.tree is not None:
            buffer.set_priorities(where, td)

    benchmark.group = f"priority {device}"
    benchmark.extra_info.update(op=f"replay step {replay}", capacity=CAPACITY, batch=BATCH_SIZE,
                                device=str(device))
    benchmark.pedantic(synced(step, device), rounds=300, iterations=1, warmup_rounds=10)


UPDATES = {"update": (funcsac.update, {}), "update_with_aux": (funcsac.update_with_aux, {}),
           "update-normalized": (funcsac.update, {"normalize_obs": True, "scale_rewards": True})}


@pytest.mark.parametrize("variant", UPDATES)
def test_compiled_update(benchmark, device, variant):
    """The W1 update as plain SAC compiles it, with the TD errors prioritized replay needs, and
    with observation and reward normalisation."""
    torch._dynamo.reset()
    fn, options = UPDATES[variant]
    cfg = workload_config("mujoco", device=str(device), **options)
    batch = random_batch(cfg)
    compiled = torch.compile(fn, fullgraph=True)
    step = stepper(lambda s, b: compiled(s, b)[:2], funcsac.init_state(cfg, seed=0), batch)
    for _ in range(3):  # the compile, then warm-up
        step()
    benchmark.group = f"priority {device}"
    benchmark.extra_info.update(op=variant, workload="mujoco", batch=BATCH_SIZE,
                                device=str(device))
    benchmark.pedantic(synced(step, device), rounds=100, iterations=1, warmup_rounds=3)
