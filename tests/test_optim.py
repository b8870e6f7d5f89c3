import math

import pytest
import torch

import funcsac
from helpers import reordered


def _params(seed):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(4, 3, generator=g, dtype=torch.float64),
            "b": torch.randn(3, generator=g, dtype=torch.float64)}


def _grads(params, step):
    # a fixed nonlinear function of the parameters, so the trajectories depend on the updates
    return {k: torch.sin(v * (step + 1)) + 0.1 * v for k, v in params.items()}


@pytest.mark.parametrize("opt_cls,wd,clip", [(torch.optim.Adam, 0.0, None),
                                             (torch.optim.Adam, 0.0, 0.5),
                                             (torch.optim.AdamW, 0.1, None),
                                             (torch.optim.Adam, 0.01, None)])
def test_matches_torch_optim_over_100_steps(opt_cls, wd, clip):
    params = _params(0)
    ref = {k: torch.nn.Parameter(v.clone()) for k, v in params.items()}
    opt = opt_cls(ref.values(), lr=1e-2, betas=(0.8, 0.99), eps=1e-7, weight_decay=wd)
    state = funcsac.adam_init(params)
    lr = torch.tensor(1e-2, dtype=torch.float64)
    for step in range(100):
        grads = _grads(params, step)
        params, state, norm = funcsac.adam_update(
            grads, state, params, lr, betas=(0.8, 0.99), eps=1e-7, weight_decay=wd,
            decoupled=opt_cls is torch.optim.AdamW, max_grad_norm=clip)
        opt.zero_grad()
        for k, p in ref.items():
            p.grad = _grads({k: p.detach()}, step)[k]
        ref_norm = torch.nn.utils.clip_grad_norm_(ref.values(), clip if clip else float("inf"))
        opt.step()
        torch.testing.assert_close(norm, ref_norm)
    for k in params:
        torch.testing.assert_close(params[k], ref[k].detach(), **reordered())
    assert state.count.item() == 100


def test_pure_and_flushes_denormals():
    params = {"w": torch.ones(8)}
    state = funcsac.adam_init(params)
    params, state, _ = funcsac.adam_update({"w": torch.ones(8)}, state, params, torch.tensor(1e-3))
    before = [t.clone() for t in (params["w"], state.mu["w"], state.nu["w"])]
    zero = {"w": torch.zeros(8)}
    for i in range(2000):  # idle weights: moments decay geometrically towards zero
        new_params, new_state, _ = funcsac.adam_update(zero, state, params, torch.tensor(1e-3))
        if i == 0:
            assert all(torch.equal(a, b) for a, b in zip(before, (params["w"], state.mu["w"],
                                                                  state.nu["w"])))
        params, state = new_params, new_state
    tiny = torch.finfo(torch.float32).tiny
    for t in (state.mu["w"], state.nu["w"]):
        assert ((t == 0) | (t.abs() >= tiny)).all()
    assert (state.mu["w"] == 0).all()


def test_step_count_is_exact_beyond_float32_precision():
    """In float32 2**24 + 1 rounds to 2**24; at that count the bias corrections are 1."""
    params = {"w": torch.ones(3)}
    state = funcsac.adam_init(params)
    state = state._replace(count=state.count + 2 ** 24)
    w, mu, nu = 1.0, 0.0, 0.0
    for expected in (2 ** 24 + 1, 2 ** 24 + 2):
        params, state, _ = funcsac.adam_update({"w": torch.ones(3)}, state, params,
                                               torch.tensor(1e-3))
        assert state.count.item() == expected
        mu, nu = 0.9 * mu + 0.1, 0.999 * nu + 0.001
        w -= 1e-3 * mu / (math.sqrt(nu) + 1e-8)
    assert state.count.dtype == torch.int64
    torch.testing.assert_close(params["w"], torch.full((3,), w))


def test_bias_corrections_in_the_learning_rate_dtype():
    params = {"w": torch.ones(3, dtype=torch.float64)}
    grads = {"w": torch.full((3,), 0.5, dtype=torch.float64)}
    lr = torch.tensor(0.1, dtype=torch.float64)
    new, state, _ = funcsac.adam_update(grads, funcsac.adam_init(params), params, lr)
    # bias-corrected, the first step moves each weight by lr * g / (|g| + eps)
    expected = 1 - 0.1 * 0.5 / (0.5 + 1e-8)
    torch.testing.assert_close(new["w"], torch.full((3,), expected, dtype=torch.float64),
                               rtol=1e-15, atol=0)
