"""Eager gradients outside function transforms run on plain autograd, and stackable critic
ensembles on batched products; both give what ``torch.func`` gives, and the transforms take over
under ``vmap``, ``grad`` and autograd-tracked inputs."""
import optree
import pytest
import torch

import funcsac
from funcsac.accel import grads
from funcsac.accel.grads import grad_and_value
from helpers import make_batch, small_config


def _loss(params, x):
    """Uses ``w`` and ``b`` but not ``unused``; returns an aux with a tensor that has a graph."""
    y = torch.tanh(x @ params["w"] + params["b"])
    return (y ** 2).mean(), {"y": y, "n": torch.tensor(3)}


def _params():
    g = torch.Generator().manual_seed(0)
    return {"w": torch.randn(4, 3, generator=g), "b": torch.randn(3, generator=g),
            "unused": torch.randn(2, generator=g)}


def test_plain_autograd_path_equals_torch_func():
    params, x = _params(), torch.randn(8, 4)
    got, (loss, aux) = grad_and_value(_loss)(params, x)
    want, (want_loss, want_aux) = torch.func.grad_and_value(_loss, has_aux=True)(params, x)
    assert got.keys() == want.keys()
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-6, atol=1e-7)
    assert torch.equal(got["unused"], torch.zeros(2))
    torch.testing.assert_close(loss, want_loss)
    torch.testing.assert_close(aux["y"], want_aux["y"])
    assert torch.equal(aux["n"], torch.tensor(3))
    assert not loss.requires_grad and not aux["y"].requires_grad
    assert not any(p.requires_grad for p in params.values())  # the caller's tensors untouched


def test_a_loss_independent_of_the_params_gives_zero_gradients():
    params = _params()
    got, (loss, _) = grad_and_value(lambda p, x: (x.sum(), ()))(params, torch.ones(3))
    assert float(loss) == 3.0
    assert all(torch.equal(g, torch.zeros_like(params[k])) for k, g in got.items())


def test_transforms_take_over_under_vmap_grad_and_tracked_inputs(monkeypatch):
    calls = []  # whether each call needed the transform
    real = grads._needs_transform
    monkeypatch.setattr(grads, "_needs_transform", lambda *a: calls.append(real(*a)) or calls[-1])
    params, xs = _params(), torch.randn(3, 8, 4)
    per_row = torch.func.vmap(lambda x: grad_and_value(_loss)(params, x)[0]["w"])(xs)
    for i in range(3):
        want = torch.func.grad_and_value(_loss, has_aux=True)(params, xs[i])[0]["w"]
        torch.testing.assert_close(per_row[i], want)
    assert calls == [True]
    # differentiating through the gradient: d/dx of sum(dL/dw), by torch.func.grad and by autograd
    outer = lambda x: grad_and_value(_loss)(params, x)[0]["w"].sum()  # noqa: E731
    x = torch.randn(8, 4)
    by_func = torch.func.grad(outer)(x)
    tracked = x.clone().requires_grad_()
    (by_autograd,) = torch.autograd.grad(outer(tracked), tracked)
    torch.testing.assert_close(by_autograd, by_func)
    assert by_func.abs().sum() > 0
    assert calls == [True, True, True]
    grad_and_value(_loss)(params, x)
    assert calls[-1] is False
    with torch.inference_mode():  # autograd records nothing there: torch.func computes it
        under = grad_and_value(_loss)(params, x)[0]["w"]
    assert calls[-1] is True
    torch.testing.assert_close(under, torch.func.grad_and_value(_loss, has_aux=True)(
        params, x)[0]["w"])


def _updates(cfg, steps=3):
    state = funcsac.init_state(cfg, seed=2)
    for i in range(steps):
        state, metrics = funcsac.update(state, make_batch(cfg, seed=i))
    return state, metrics


@pytest.mark.parametrize("options", [
    dict(), dict(network="simba", weight_decay=0.01, max_grad_norm=1.0),
    dict(algorithm="tqc", num_quantiles=5, drop_quantiles=1), dict(algorithm="crossq"),
    dict(critic_dropout=0.01, critic_layer_norm=True, num_critics=4, num_target_critics=2)])
def test_eager_update_outside_transforms_equals_the_update_through_torch_func(monkeypatch,
                                                                              options):
    cfg = small_config(**options)
    fast = _updates(cfg)
    monkeypatch.setattr(grads, "untransformed", lambda: False)
    slow = _updates(cfg)
    for a, b in zip(optree.tree_leaves(fast, namespace="funcsac"),
                    optree.tree_leaves(slow, namespace="funcsac")):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
