"""update_many: rlpd's order (d critic steps, then one actor step) against a loop, sequential
updates otherwise; eagerly, compiled and vmapped; DroQ dropout masks."""
import dataclasses

import optree
import pytest
import torch

import funcsac
from funcsac.steps import prepare, step_keys
from helpers import make_batch, reordered, small_config

DROQ = small_config(num_critics=2, critic_dropout=0.2, critic_layer_norm=True, policy_delay=2)


def _stack(*trees):
    return optree.tree_map(lambda *x: torch.stack(x), *trees, namespace="funcsac")


def _sequential(state, batches):
    for b in batches:
        state, metrics = funcsac.update(state, b)
    return state, metrics


def _rlpd_order(state, batches):
    """rlpd's ``update`` as a loop of the public steps: ``policy_delay`` critic steps, then one
    actor and temperature step on the last of their batches, against the newest critics."""
    d = state.config.policy_delay
    for start in range(0, len(batches), d):
        for b in batches[start:start + d]:
            key, k_critic, _ = step_keys(state)
            state, metrics = funcsac.critic_step(state, prepare(state, b), k_critic)
            state = state.replace(key=key, step=state.step + 1)
        key, k_actor = funcsac.keys.split(state.key, 2)
        state, actor_metrics = funcsac.actor_step(state, prepare(state, b), k_actor)
        state, temperature_metrics = funcsac.temperature_step(state, actor_metrics["entropy"])
        state = state.replace(key=key)
    metrics = {k: v for k, v in metrics.items() if k != "td_error"}
    return state, {**metrics, **actor_metrics, **temperature_metrics}


@pytest.mark.parametrize("compiled", [False, True])
def test_update_many_runs_critic_blocks_then_one_actor_step(compiled):
    """Compiled with the aot_eager backend: dynamo and AOTAutograd trace the scan as inductor
    would receive it, in seconds (test_compile.py covers inductor's numerics of the step)."""
    batches = [make_batch(DROQ, seed=i) for i in range(4)]
    state = funcsac.init_state(DROQ, seed=0)
    many = funcsac.update_many
    if compiled:
        many = torch.compile(many, fullgraph=True, backend="aot_eager")
    new, metrics = many(state, _stack(*batches))
    expected, last = _rlpd_order(state, batches)
    tol = dict(rtol=1e-5, atol=1e-6) if compiled else dict(rtol=0, atol=0)
    optree.tree_map(lambda a, b: torch.testing.assert_close(a, b, **tol), new, expected,
                    namespace="funcsac")
    assert metrics["critic_loss"].shape == (4,) and metrics["actor_loss"].shape == (2,)
    for name in funcsac.METRIC_NAMES:
        torch.testing.assert_close(metrics[name][-1], last[name], **tol)
    # 4 critic steps, 2 actor and temperature steps: none computed and discarded
    assert (new.critic_opt.count.item(), new.actor_opt.count.item(),
            new.alpha_opt.count.item(), new.step.item()) == (4, 2, 2, 4)


def test_update_many_without_a_delay_is_sequential_updates():
    """policy_delay 1 (SimBa's and BRO's order), or a delay that does not divide the number of
    batches: a whole update per batch."""
    for cfg, utd in ((dataclasses.replace(DROQ, policy_delay=1), 3), (DROQ, 3)):
        batches = [make_batch(cfg, seed=i) for i in range(utd)]
        state = funcsac.init_state(cfg, seed=0)
        new, metrics = funcsac.update_many(state, _stack(*batches))
        expected, last = _sequential(state, batches)
        optree.tree_map(lambda a, b: torch.testing.assert_close(a, b, rtol=0, atol=0), new,
                        expected, namespace="funcsac")
        assert metrics["actor_loss"].shape == (utd,)


def test_prioritized_aux_has_a_td_error_per_critic_step():
    batches = [make_batch(DROQ, seed=i) for i in range(4)]
    state = funcsac.init_state(DROQ, seed=0)
    _, _, aux = funcsac.make_update_many(with_aux=True)(state, _stack(*batches))
    assert aux["td_error"].shape == (4, batches[0].obs.shape[0])
    first, _, first_aux = funcsac.update_with_aux(state, batches[0])
    torch.testing.assert_close(aux["td_error"][0], first_aux["td_error"], rtol=0, atol=0)


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
        expected, _ = _rlpd_order(s, b)
        optree.tree_map(lambda x, y: torch.testing.assert_close(x[i], y, **reordered(DROQ.dtype)),
                        stacked, expected, namespace="funcsac")


def test_compiled_steps_accept_a_new_batch_size():
    """After a batch-size change dynamo recompiles with a symbolic size; the checks must trace."""
    many = torch.compile(funcsac.update_many, fullgraph=True, backend="aot_eager")
    state = funcsac.init_state(DROQ, seed=0)
    for size in (32, 16):
        batches = [make_batch(DROQ, batch_size=size, seed=i) for i in range(2)]
        new, _ = many(state, _stack(*batches))
        assert new.step.item() == 2
