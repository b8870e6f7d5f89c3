"""``SACConfig.precision="bf16"``: the networks' matrix products in bfloat16, everything else in
float32.

Bounds. bfloat16 keeps 8 significant bits: rounding a number to it changes it by at most
``u = 2^-8`` relative. A linear layer's output ``y = x W^T + b`` taken from operands rounded to
bfloat16 (each product exact in the float32 accumulator, the sum in float32) and rounded back to
bfloat16 satisfies, per element,
``|y_bf16 - y| <= u |y| + (2u + u^2) (|x| |W|^T + |b|) + K 2^-24 (|x| |W|^T + |b|)`` with ``K``
the inner size (the last term the float32 sum; float64 is the exact side here).
"""
import dataclasses

import optree
import pytest
import torch
from torch import nn

import funcsac
from funcsac.networks import apply_network
from funcsac.precision import set_products_dtype
from funcsac.platform import devices
from helpers import BACKENDS, assert_compiled_equals_eager, make_batch, reordered, small_config

U = 2.0 ** -8  # bfloat16's unit roundoff


def test_a_linear_layer_in_bf16_is_within_the_rounding_bound_and_beyond_float32s():
    g = torch.Generator().manual_seed(0)
    layer = nn.Sequential(nn.Linear(64, 32))
    x = torch.randn(128, 64, generator=g)
    params = {"0.weight": torch.randn(32, 64, generator=g) / 8,
              "0.bias": torch.randn(32, generator=g)}
    exact = torch.nn.functional.linear(x.double(), params["0.weight"].double(),
                                       params["0.bias"].double())
    y = apply_network(set_products_dtype(layer, torch.bfloat16), params, x)
    assert y.dtype == torch.float32
    size = x.abs().double() @ params["0.weight"].abs().double().T + params["0.bias"].abs().double()
    bound = U * exact.abs() + (2 * U + U * U + 64 * 2.0 ** -24) * size
    err = (y.double() - exact).abs()
    assert (err <= bound).all(), (err / bound).max()
    # the products really are bfloat16 ones: far beyond what float32 products err by
    assert (err / size).max() > 1e-3


def test_a_network_takes_float32_in_and_gives_float32_gradients_out():
    cfg = small_config(precision="bf16", network_options=None)
    state = funcsac.init_state(cfg, seed=0)
    obs = torch.randn(8, cfg.obs_dim, requires_grad=True)

    def loss(params):
        return apply_network(state.static.actor, params, obs).square().sum()

    grads = torch.func.grad(loss)(state.actor)
    assert all(g.dtype == torch.float32 for g in grads.values())
    assert any(g.abs().sum() > 0 for g in grads.values())


@pytest.mark.parametrize("algorithm,extra", [("sac", {}), ("crossq", {}),
                                              ("tqc", {"num_quantiles": 5})])
def test_a_bf16_update_keeps_every_state_tensor_float32_and_stays_near_fp32s(algorithm, extra):
    """One update from the same state and batch: every leaf of the new state is float32; the
    losses agree with fp32's within a relative ``6 L u`` (``L`` products in a chain, each within
    ``3u`` of its exact value as above, and squared errors double a relative error); the
    critics' gradient steps (Adam's first, ``lr g / (|g| + eps)``) point the same way for most
    entries."""
    fp32 = small_config(algorithm=algorithm, hidden_sizes=(64, 64), **extra)
    bf16 = dataclasses.replace(fp32, precision="bf16")
    batch = make_batch(fp32, batch_size=64)
    s32 = funcsac.init_state(fp32, seed=0)
    s16 = funcsac.init_state(bf16, seed=0)
    new32, m32 = funcsac.update(s32, batch)
    new16, m16 = funcsac.update(s16, batch)
    for leaf in optree.tree_leaves(new16, namespace="funcsac"):
        assert leaf.dtype in (torch.float32, torch.int64, torch.uint32, torch.bool), leaf.dtype
    layers = len(fp32.hidden_sizes) + 1
    for name in ("critic_loss", "actor_loss"):
        a, b = m32[name].item(), m16[name].item()
        assert abs(a - b) <= 6 * layers * U * abs(a), (name, a, b)
    steps32 = {k: new32.critic[k] - s32.critic[k] for k in s32.critic}
    steps16 = {k: new16.critic[k] - s16.critic[k] for k in s16.critic}
    same = sum(((steps32[k] * steps16[k]) > 0).sum().item() for k in steps32)
    total = sum(steps32[k].numel() for k in steps32)
    assert same / total > 0.9


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_compiled_bf16_update_equals_the_eager_one(backend):
    cfg = small_config(precision="bf16", hidden_sizes=(32, 32))
    # the same bfloat16 products compiled and eager, up to how the compiler fuses the casts
    assert_compiled_equals_eager(cfg, lambda step: make_batch(cfg, batch_size=16, seed=step), 3,
                                 rtol=4 * U, atol=4 * U, backend=backend)


def test_vmapped_bf16_agents_train_as_each_alone():
    """Batched and single products sum in other orders, so a result can round to the
    neighbouring bfloat16 and carry that on. Bounds: each metric within ``6 L u`` relative (as
    against fp32 above); each parameter within ``2 lr`` (Adam's first step is
    ``lr g / (|g| + eps)``, so a gradient entry near 0 whose sign a rounding flips moves by up to
    twice the rate); another agent's batch or key breaks both."""
    cfg = small_config(precision="bf16", hidden_sizes=(32, 32))
    states = [funcsac.init_state(cfg, seed=s) for s in range(3)]
    batches = [make_batch(cfg, batch_size=16, seed=10 + s) for s in range(3)]
    stack = lambda xs: optree.tree_map(lambda *x: torch.stack(x), *xs, namespace="funcsac")  # noqa: E731
    together, metrics = torch.func.vmap(funcsac.update)(stack(states), stack(batches))
    layers, tol = len(cfg.hidden_sizes) + 1, reordered(torch.float32)["atol"]
    for i, (s, b) in enumerate(zip(states, batches)):
        alone, alone_metrics = funcsac.update(s, b)
        for name, value in alone_metrics.items():
            assert abs(metrics[name][i] - value) <= 6 * layers * U * abs(value) + tol, name
        for field, lr in (("actor", cfg.actor_lr), ("critic", cfg.critic_lr)):
            for k, v in getattr(alone, field).items():
                assert (getattr(together, field)[k][i] - v).abs().max() <= 2 * lr + tol, k
        assert torch.equal(together.step[i], alone.step) and torch.equal(together.key[i], alone.key)


def test_a_custom_network_runs_its_products_under_autocast():
    class Custom(nn.Module):  # not a plain Sequential: through functional_call
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(16, 4)

        def forward(self, x):
            assert torch.is_autocast_enabled("cpu")
            return self.linear(x)

    custom = set_products_dtype(Custom(), torch.bfloat16)
    x = torch.randn(5, 16)
    params = dict(custom.named_parameters())
    y = apply_network(custom, params, x)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, custom.linear(x), rtol=4 * U, atol=4 * U)


def test_precision_is_checked():
    with pytest.raises(ValueError, match="SACConfig.precision must be one of .'fp32', 'bf16'., "
                                         "got 'fp16'"):
        small_config(precision="fp16")
    with pytest.raises(ValueError, match="precision must be 'fp32' with dtype torch.float64"):
        small_config(precision="bf16", dtype=torch.float64)
    assert funcsac.TrainConfig(precision="bf16").precision == "bf16"


@pytest.mark.parametrize("flags,slow", [("fpu avx2", True), ("avx512f avx512_bf16", False),
                                        ("avx512f amx_bf16 amx_tile", False)])
def test_where_bf16_products_are_slow_is_said(monkeypatch, flags, slow):
    import funcsac.platform.cpu as cpu
    monkeypatch.setattr(cpu, "cpu_description", lambda: {"flags": flags})
    why = devices.bf16_products_slow("cpu")
    assert bool(why) == slow
    if slow:
        assert "neither AMX nor AVX512-BF16" in why
        # what init_state says, once per device (the cache left out here)
        with pytest.warns(UserWarning, match="precision bf16 on cpu: this CPU has neither AMX "
                                             "nor AVX512-BF16, so its bfloat16 products are "
                                             "emulated, slower than float32"):
            funcsac.state._warn_if_slow_bf16.__wrapped__("cpu")
