"""Eager update and act from several threads at once give the results of sequential calls."""
import sys
import threading

import optree
import pytest
import torch

import funcsac
from helpers import make_batch, small_config

CFG = small_config(num_critics=3, critic_dropout=0.1, policy_delay=2)


@pytest.fixture
def frequent_switches():
    """Threads switch every microsecond, so they interleave inside each forward pass."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _run_in_threads(fns):
    """``fns[0]`` on this thread and each other one in a new thread, all started together; their
    results in order."""
    barrier, results, errors = threading.Barrier(len(fns)), [None] * len(fns), []

    def run(i):
        try:
            barrier.wait()
            results[i] = fns[i]()
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(1, len(fns))]
    for t in threads:
        t.start()
    run(0)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def _train(seed, steps=20):
    state = funcsac.init_state(CFG, seed=seed)
    for i in range(steps):
        state, _ = funcsac.update(state, make_batch(CFG, seed=100 * seed + i))
    return state


def _act(seed, calls=50):
    state, key = funcsac.init_state(CFG, seed=seed), funcsac.keys.make_key(seed)
    obs = make_batch(CFG, seed=seed).obs
    return torch.stack([funcsac.act(state, obs, deterministic=i % 2 == 0, key=k)
                        for i, k in enumerate(funcsac.keys.split(key, calls))])


def _assert_equal_trees(a, b):
    la, sa = optree.tree_flatten(a, namespace="funcsac")
    lb, sb = optree.tree_flatten(b, namespace="funcsac")
    assert sa == sb and all(torch.equal(x, y) for x, y in zip(la, lb))


def test_concurrent_updates_equal_sequential_ones(frequent_switches):
    expected = [_train(1), _train(2)]
    for got, want in zip(_run_in_threads([lambda: _train(1), lambda: _train(2)]), expected):
        _assert_equal_trees(got, want)


def test_concurrent_act_equals_sequential(frequent_switches):
    expected = [_act(1), _act(2)]
    for got, want in zip(_run_in_threads([lambda: _act(1), lambda: _act(2)]), expected):
        assert torch.equal(got, want)


def test_compiled_and_eager_updates_in_threads_at_once(frequent_switches):
    """Once compiled (on one thread), a compiled update runs in another thread beside an eager
    one without recompiling (aot_eager backend: inductor's guards and graph, not its kernels).
    One compiled caller at a time: torch counts a fullgraph call's compiled frames once per
    process, so two threads calling at once reset each other's count, and one of them now and
    then fails with "found no compiled frames"."""
    torch._dynamo.reset()
    compiled = torch.compile(funcsac.update, fullgraph=True, backend="aot_eager")
    compiled(funcsac.init_state(CFG, seed=3), make_batch(CFG))

    def train_compiled(seed):
        state = funcsac.init_state(CFG, seed=seed)
        for i in range(20):
            state, _ = compiled(state, make_batch(CFG, seed=100 * seed + i))
        return state

    with torch._dynamo.config.patch(error_on_recompile=True):
        eager, compiled_state = _run_in_threads([lambda: _train(2), lambda: train_compiled(1)])
    _assert_equal_trees(eager, _train(2))
    optree.tree_map(lambda x, y: torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5),
                    compiled_state, _train(1), namespace="funcsac")
