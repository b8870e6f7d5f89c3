"""Compiled functions kept on disk: same numbers as eager, loaded by a new process, keyed by
everything that shapes the compiled code, and refusing inputs they were not compiled for."""
import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.utils._pytree as pytree

import funcsac
from funcsac.driver.agents import stack, vmap_agents
from funcsac.stored_compile import artifact_key, compile_stored
from helpers import TINY, eval_rows, make_batch, small_config

CFG = small_config(policy_delay=2)


def _two_agents():
    state = stack([funcsac.init_state(CFG, seed=s) for s in (0, 1)])
    batch = stack([make_batch(CFG, seed=s) for s in (0, 1)])
    return state, batch


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The update of two vmapped agents, compiled into a fresh store."""
    store = tmp_path_factory.mktemp("store")
    state, batch = _two_agents()
    fn = compile_stored(vmap_agents(funcsac.update, 2), (state, batch), "test-agents", store)
    return fn, store


def _leaves(tree):
    return [x for x in pytree.tree_leaves(tree) if isinstance(x, torch.Tensor)]


def test_stored_update_equals_eager_step_after_step(stored):
    """Three steps: the outputs of one call (whatever their strides) feed the next."""
    fn, _ = stored
    assert not fn.loaded
    state, batch = _two_agents()
    eager = compiled = state
    for _ in range(3):
        eager, eager_metrics = vmap_agents(funcsac.update, 2)(eager, batch)
        compiled, metrics = fn(compiled, batch)
    assert compiled.config == CFG
    for x, y in zip(_leaves((compiled, metrics)), _leaves((eager, eager_metrics))):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_a_new_process_loads_the_stored_update_and_gets_the_same_numbers(stored, tmp_path):
    fn, store = stored
    state, batch = _two_agents()
    here = fn(*fn(state, batch)[:1], batch)[0]
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import funcsac
        from funcsac.driver.agents import vmap_agents
        from test_stored_compile import _two_agents
        state, batch = _two_agents()
        fn = funcsac.compile_stored(vmap_agents(funcsac.update, 2), (state, batch),
                                    "test-agents", {str(store)!r})
        assert fn.loaded
        torch.save(fn(fn(state, batch)[0], batch)[0].critic, {str(tmp_path / "out.pt")!r})
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    there = torch.load(tmp_path / "out.pt")
    for name, x in here.critic.items():
        assert torch.equal(x, there[name]), name


def test_inputs_it_was_not_compiled_for_are_refused(stored):
    fn, _ = stored
    state, batch = _two_agents()
    smaller = pytree.tree_map(lambda x: x[:, :16], batch)
    with pytest.raises(ValueError, match="compiled for inputs leaf .*expected.*32"):
        fn(state, smaller)
    with pytest.raises(ValueError, match="compiled for inputs leaf .*int64"):
        fn(state.replace(step=state.step.double()), batch)


def test_the_key_holds_structure_but_not_initial_hyperparameter_values():
    state, batch = funcsac.init_state(CFG), make_batch(CFG)

    def key(**changes):
        cfg = dataclasses.replace(CFG, **changes)
        return artifact_key("update", (funcsac.init_state(cfg), make_batch(cfg)))

    assert key() == artifact_key("update", (state, batch))
    assert key(critic_lr=3e-4, gamma=0.9, tau=0.01, init_alpha=0.1, target_entropy=-3.0) == key()
    for structural in (dict(policy_delay=3), dict(hidden_sizes=(8, 8)), dict(log_std_min=-4.0),
                       dict(max_grad_norm=1.0), dict(dtype=torch.float64)):
        assert key(**structural) != key(), structural
    assert artifact_key("update_many", (state, batch)) != key()
    assert artifact_key("update", (state, make_batch(CFG, batch_size=64))) != key()
    custom = small_config(actor_factory=lambda o, a, h: funcsac.mlp(o, 2 * a, h))
    assert artifact_key("update", (funcsac.init_state(custom), make_batch(custom))) is None


def _double(x):
    return x * 2


def test_a_damaged_file_is_compiled_again_and_replaced(tmp_path):
    x = torch.arange(4.0)
    first = compile_stored(_double, (x,), "double", tmp_path)
    (path,) = tmp_path.glob("double-*.pt2")
    path.write_bytes(b"not a compiled function")
    with pytest.warns(UserWarning, match="cannot be loaded"):
        again = compile_stored(_double, (x,), "double", tmp_path)
    assert not first.loaded and not again.loaded
    assert torch.equal(again(x), x * 2)
    assert compile_stored(_double, (x,), "double", tmp_path).loaded


def test_a_compiled_run_and_a_later_one_loading_the_update_train_alike(tmp_path, monkeypatch):
    from funcsac.driver import loop
    made = []
    monkeypatch.setattr(loop, "compile_stored",
                        lambda *a, **k: made.append(compile_stored(*a, **k)) or made[-1])
    cfg = funcsac.TrainConfig(**{**TINY, "compile": True}, env_id="Pendulum-v1",
                              total_steps=300, learning_starts=200, eval_every=150, seed=3)
    funcsac.train(cfg, tmp_path / "first")
    funcsac.train(cfg, tmp_path / "second")
    assert [f.loaded for f in made] == [False, True]
    assert eval_rows(tmp_path / "first") == eval_rows(tmp_path / "second")
