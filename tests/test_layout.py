"""The critics' wide Linear layers take their products weight first (``order_products``): the same
values and gradients as ``F.linear``, the weight's gradient in the weight's layout."""
import contextlib

import optree
import pytest
import torch
import torch.nn.functional as F

import funcsac
import funcsac.accel.product_order
import funcsac.state
from funcsac.accel.product_order import weight_first_linear
from funcsac.accel.product_order import linear_of, order_products

from helpers import (assert_compiled_equals_eager, assert_vmap_equals_loop, make_batch, reordered,
                     small_config)


def _ensemble_grads(linear, x, w, b):
    """``sum(linear(x, w_i, b_i) * c)`` over an ensemble of 3, vmapped: its value and its
    gradients in ``w`` and ``b``."""
    c = torch.linspace(-1, 1, w.shape[1], dtype=x.dtype)

    def loss(w, b):
        return (torch.func.vmap(linear, in_dims=(None, 0, 0))(x, w, b) * c).sum()

    return loss(w, b), torch.func.grad(loss, argnums=(0, 1))(w, b)


def test_weight_first_linear_equals_f_linear_and_keeps_the_weights_layout():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 5, generator=g, dtype=torch.float64)
    w = torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
    b = torch.randn(3, 4, generator=g, dtype=torch.float64)
    value, (dw, db) = _ensemble_grads(weight_first_linear, x, w, b)
    expected, (dw_ref, db_ref) = _ensemble_grads(F.linear, x, w, b)
    for got, want in ((value, expected), (dw, dw_ref), (db, db_ref)):
        torch.testing.assert_close(got, want, **reordered())
    assert dw.is_contiguous(), dw.stride()  # [3, 4, 5] row-major, as the weights and moments
    torch.testing.assert_close(weight_first_linear(x[0], w[0], b[0]), F.linear(x[0], w[0], b[0]))


def _critic_marks(cfg):
    state = funcsac.init_state(cfg, seed=0)
    return ([linear_of(m) is weight_first_linear for m in state.static.critic.modules()
             if isinstance(m, torch.nn.Linear)],
            [linear_of(m) is weight_first_linear for m in state.static.actor.modules()
             if isinstance(m, torch.nn.Linear)])


def test_an_ensemble_with_a_wide_layer_takes_all_its_products_weight_first():
    wide = small_config(obs_dim=17, act_dim=6, hidden_sizes=(1024, 1024),
                        actor_hidden_sizes=(16, 16))  # 2 x 1024 x 1024 entries
    assert _critic_marks(wide) == ([True] * 3, [False] * 3)
    assert _critic_marks(small_config()) == ([False] * 3, [False] * 3)
    with torch.device("meta"):
        template = torch.nn.Sequential(torch.nn.Linear(1024, 1024))
    order_products(template, 2, "cuda")  # not measured on CUDA: left as F.linear
    assert linear_of(template[0]) is F.linear


@contextlib.contextmanager
def weight_first_everywhere():
    """Every critic's Linear layers take their products weight first, for the configs whose
    templates are built inside (``static_for`` builds them afresh here, and after)."""
    funcsac.state.static_for.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(funcsac.accel.product_order, "WEIGHT_FIRST_MIN", 0)
            yield
    finally:
        funcsac.state.static_for.cache_clear()


@pytest.fixture
def every_layer_weight_first():
    """``weight_first_everywhere`` for the whole test."""
    with weight_first_everywhere():
        yield


@pytest.mark.parametrize("variant", [
    {}, {"algorithm": "simbav2", "network": "simbav2"},
    {"algorithm": "crossq", "critic_batch_renorm": True, "actor_batch_renorm": True},
    {"algorithm": "flashsac", "network": "flashsac"}], ids=["sac", "simbav2", "crossq", "flashsac"])
def test_an_update_with_products_weight_first_equals_one_without(variant):
    cfg = small_config(dtype=torch.float64, **variant)
    batch = make_batch(cfg, seed=1)
    plain, plain_metrics = funcsac.update(funcsac.init_state(cfg, seed=0), batch)
    with weight_first_everywhere():
        state = funcsac.init_state(cfg, seed=0)
        assert all(linear_of(m) is weight_first_linear for m in state.static.critic.modules()
                   if isinstance(m, torch.nn.Linear))
        first, first_metrics = funcsac.update(state, batch)
    optree.tree_map(lambda a, b: torch.testing.assert_close(a, b, **reordered()),
                    (first, first_metrics), (plain, plain_metrics), namespace="funcsac")


def test_vmapped_agents_with_products_weight_first_equal_each_alone(every_layer_weight_first):
    cfg = small_config(dtype=torch.float64)
    assert_vmap_equals_loop(cfg, lambda s: make_batch(cfg, seed=s))


def test_the_compiled_update_with_products_weight_first_equals_the_eager(
        every_layer_weight_first):
    cfg = small_config()
    assert_compiled_equals_eager(cfg, lambda s: make_batch(cfg, seed=s), steps=2,
                                 backend="aot_eager", **reordered(torch.float32))
