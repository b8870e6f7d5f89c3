import torch
from torch.distributions import Normal, TanhTransform, TransformedDistribution

import funcsac
from funcsac import keys


def test_log_prob_matches_torch_distributions():
    g = torch.Generator().manual_seed(0)
    mean = torch.randn(64, 3, generator=g, dtype=torch.float64)
    log_std = torch.rand(64, 3, generator=g, dtype=torch.float64) * 3 - 2
    u = mean + log_std.exp() * torch.randn(64, 3, generator=g, dtype=torch.float64)
    d = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform(cache_size=1)])
    expected = d.log_prob(torch.tanh(u)).sum(-1)
    torch.testing.assert_close(funcsac.tanh_gaussian_log_prob(mean, log_std, u), expected)


def test_log_prob_stable_when_saturated():
    mean = torch.tensor([[30.0, -30.0]])
    log_std = torch.tensor([[-5.0, -5.0]])
    u = mean.clone()
    lp = funcsac.tanh_gaussian_log_prob(mean, log_std, u)
    assert torch.isfinite(lp).all()
    # log(1 - tanh(u)^2) ~ log 4 - 2|u| for large |u|
    expected = (-log_std - 0.5 * torch.log(torch.tensor(2 * torch.pi))
                - (torch.log(torch.tensor(4.0)) - 60)).sum()
    torch.testing.assert_close(lp[0], expected)


def test_sample_in_range_and_uses_key():
    mean, log_std = torch.zeros(1000, 2), torch.zeros(1000, 2)
    a1, lp1 = funcsac.tanh_gaussian_sample(mean, log_std, keys.make_key(0))
    a2, _ = funcsac.tanh_gaussian_sample(mean, log_std, keys.make_key(0))
    a3, _ = funcsac.tanh_gaussian_sample(mean, log_std, keys.make_key(1))
    assert torch.equal(a1, a2) and not torch.equal(a1, a3)
    assert a1.abs().max() < 1 and lp1.shape == (1000,)
    # tanh of a standard normal: the fraction within tanh(1) is the normal's mass within 1
    assert abs((a1.abs() < torch.tanh(torch.tensor(1.0))).float().mean().item() - 0.6827) < 0.03


def test_act_with_given_noise_equals_act_drawing_it_from_the_key():
    import pytest
    from helpers import small_config
    cfg = small_config()
    state = funcsac.init_state(cfg)
    obs, key = torch.randn(4, cfg.obs_dim), keys.make_key(3)
    noise = keys.normal(key, (4, cfg.act_dim), cfg.dtype)
    assert torch.equal(funcsac.act(state, obs, deterministic=False, key=key),
                       funcsac.act(state, obs, deterministic=False, noise=noise))
    torch.testing.assert_close(funcsac.act(state, obs[0], deterministic=False, noise=noise[0]),
                               funcsac.act(state, obs, deterministic=False, noise=noise)[0])
    with pytest.raises(ValueError, match=r"noise must be torch.float32 of shape \[4, 2\]"):
        funcsac.act(state, obs, deterministic=False, noise=noise[:2])
