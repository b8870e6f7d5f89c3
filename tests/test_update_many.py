"""update_many equals sequential updates, eagerly, compiled and vmapped; DroQ dropout masks."""
import optree
import pytest
import torch

import funcsac
from helpers import make_batch, reordered, small_config

DROQ = small_config(num_critics=2, critic_dropout=0.2, critic_layer_norm=True, policy_delay=2)


def _stack(*trees):
    return optree.tree_map(lambda *x: torch.stack(x), *trees)


def _sequential(state, batches):
    for b in batches:
        state, metrics = funcsac.update(state, b)
    return state, metrics


@pytest.mark.parametrize("compiled", [False, True])
def test_update_many_equals_sequential_updates(compiled):
    """Compiled with the aot_eager backend: dynamo and AOTAutograd trace the scan as inductor
    would receive it, in seconds (test_compile.py covers inductor's numerics of the step)."""
    batches = [make_batch(DROQ, seed=i) for i in range(4)]
    state = funcsac.init_state(DROQ, seed=0)
    many = funcsac.update_many
    if compiled:
        many = torch.compile(many, fullgraph=True, backend="aot_eager")
    new, metrics = many(state, _stack(*batches))
    expected, last = _sequential(state, batches)
    tol = dict(rtol=1e-5, atol=1e-6) if compiled else dict(rtol=0, atol=0)
    optree.tree_map(lambda a, b: torch.testing.assert_close(a, b, **tol), new, expected)
    assert metrics["critic_loss"].shape == (4,)
    torch.testing.assert_close(metrics["critic_loss"][-1], last["critic_loss"], **tol)


def test_dropout_masks_differ_per_critic_and_key_and_vanish_without_key():
    state = funcsac.init_state(DROQ, seed=0)
    same = {k: v[:1].expand_as(v) for k, v in state.critic.items()}  # two identical critics
    batch = make_batch(DROQ)
    apply = lambda key: funcsac.apply_critics(state.static.critic, same, batch.obs,  # noqa: E731
                                              batch.action, key)
    k1, k2 = funcsac.keys.split(funcsac.keys.make_key(0), 2)
    q1 = apply(k1)
    assert not torch.allclose(q1[0], q1[1])  # each critic its own mask
    assert not torch.allclose(q1, apply(k2))  # each key (step) new masks
    assert torch.equal(q1, apply(k1))  # pure
    q0 = apply(None)
    assert torch.equal(q0[0], q0[1])  # no key: no dropout


def test_droq_vmapped_over_seeds_equals_loop():
    states = [funcsac.init_state(DROQ, seed=s) for s in range(3)]
    batches = [[make_batch(DROQ, seed=10 * s + i) for i in range(2)] for s in range(3)]
    stacked, _ = torch.func.vmap(funcsac.update_many)(
        _stack(*states), _stack(*[_stack(*b) for b in batches]))
    for i, (s, b) in enumerate(zip(states, batches)):
        expected, _ = _sequential(s, b)
        optree.tree_map(lambda x, y: torch.testing.assert_close(x[i], y, **reordered(DROQ.dtype)),
                        stacked, expected)


def test_compiled_steps_accept_a_new_batch_size():
    """After a batch-size change dynamo recompiles with a symbolic size; the checks must trace."""
    many = torch.compile(funcsac.update_many, fullgraph=True, backend="aot_eager")
    state = funcsac.init_state(DROQ, seed=0)
    for size in (32, 16):
        batches = [make_batch(DROQ, batch_size=size, seed=i) for i in range(2)]
        new, _ = many(state, _stack(*batches))
        assert new.step.item() == 2
