"""The compiled update: one graph, no recompile during a run, same numbers as eager."""
import optree
import pytest
import torch

import funcsac
from funcsac.accel.compile.stored import artifact_path, compile_stored
from helpers import make_batch, small_config

CFG = small_config(num_critics=3, num_target_critics=2, policy_delay=2, target_update_every=2)


@pytest.fixture(scope="module")
def compiled_update():
    torch._dynamo.reset()
    return torch.compile(funcsac.update, fullgraph=True)


def _assert_trees_close(a, b, **tol):
    optree.tree_map(lambda x, y: torch.testing.assert_close(x, y, **tol), a, b, namespace="funcsac")


def test_compiled_equals_eager_after_1_and_100_steps_without_recompile(compiled_update):
    eager_state = compiled_state = funcsac.init_state(CFG, seed=0)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for step in range(100):
            batch = make_batch(CFG, seed=step)
            if step == 50:  # dynamic hyperparameters change without a recompile
                hp = eager_state.hparams._replace(critic_lr=torch.tensor(3e-4),
                                                  tau=torch.tensor(0.01))
                eager_state = eager_state.replace(hparams=hp)
                compiled_state = compiled_state.replace(hparams=hp)
            eager_state, eager_metrics = funcsac.update(eager_state, batch)
            compiled_state, compiled_metrics = compiled_update(compiled_state, batch)
            if step == 0:
                _assert_trees_close(compiled_state, eager_state, rtol=1e-5, atol=1e-6)
                _assert_trees_close(compiled_metrics, eager_metrics, rtol=1e-5, atol=1e-6)
    assert compiled_state.step.item() == 100
    _assert_trees_close(compiled_state, eager_state, rtol=1e-3, atol=1e-4)
    _assert_trees_close(compiled_metrics, eager_metrics, rtol=1e-3, atol=1e-4)


def test_compiled_update_does_not_mutate_inputs(compiled_update):
    state = funcsac.init_state(CFG, seed=1)
    batch = make_batch(CFG)
    before = optree.tree_map(torch.clone, (state, batch), namespace="funcsac")
    compiled_update(state, batch)
    optree.tree_map(lambda x, y: torch.testing.assert_close(x, y, rtol=0, atol=0), (state, batch),
                    before, namespace="funcsac")


@pytest.mark.slow  # max-autotune times every GEMM template: a minute of compiling on a CPU
def test_compile_update_helper_and_max_autotune_mode():
    torch._dynamo.reset()
    step = funcsac.compile_update(mode="max-autotune-no-cudagraphs")
    state = funcsac.init_state(CFG, seed=2)
    batch = make_batch(CFG)
    compiled = step(state, batch)
    _assert_trees_close(compiled, funcsac.update(state, batch), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_cuda_graphs_feed_outputs_back_safely():
    cfg = small_config(device="cuda")
    step = funcsac.compile_update(mode="reduce-overhead")
    eager = compiled = funcsac.init_state(cfg, seed=0)
    for i in range(5):
        batch = make_batch(cfg, seed=i)
        batch = optree.tree_map(lambda x: x.cuda(), batch, namespace="funcsac")
        eager, _ = funcsac.update(eager, batch)
        compiled, _ = step(compiled, batch)
    _assert_trees_close(compiled, eager, rtol=1e-4, atol=1e-5)


def _double(x):
    return x * 2


def test_another_torch_compiles_with_torch_compile_and_says_so(tmp_path, monkeypatch):
    """The store is written for one torch release; under another, nothing is stored or loaded
    (no path for a background compile either) and torch.compile computes, after one line."""
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    monkeypatch.setattr(torch, "__version__", "2.99.0+cpu")
    x = torch.arange(4.0)
    assert artifact_path(_double, (x,), "double", store) is None
    with pytest.warns(UserWarning, match=r"double: funcsac's compile store is written for torch "
                                         r"2\.13, this is torch 2\.99\.0\+cpu; compiled with "
                                         r"torch.compile \(inductor's own cache\) instead"):
        compiled = compile_stored(_double, (x,), "double", store)
    assert list(store.iterdir()) == [] and not hasattr(compiled, "loaded")
    assert torch.equal(compiled(x), x * 2)
