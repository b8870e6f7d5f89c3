"""The apply functions run a plain ``nn.Sequential`` directly and any other module through
``functional_call``; both give the module's own forward. The MLP's weight inits."""
import math

import pytest
import torch
from torch import nn
from torch.func import functional_call

import funcsac
from funcsac import keys
from funcsac.networks import KeyedDropout, apply_network, _is_plain, module_params
from helpers import small_config


def _droq_like():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), KeyedDropout(0.3), nn.LayerNorm(8), nn.ReLU(),
                         nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1, bias=False))


def test_a_plain_sequential_runs_directly_and_equals_its_forward():
    net = _droq_like()
    assert _is_plain(net)
    params = {**module_params(net), "1.key": keys.make_key(4)}
    x = torch.randn(16, 5)
    expected = functional_call(net, params, (x,))
    assert torch.equal(apply_network(net, params, x), expected)
    assert not torch.equal(apply_network(net, {**params, "1.key": keys.make_key(5)}, x), expected)


def test_drq_encoder_runs_directly_and_equals_its_forward():
    torch.manual_seed(0)
    net = funcsac.encoders.drq_encoder((6, 20, 20), 7)
    assert _is_plain(net)
    params, x = module_params(net), torch.rand(3, 6, 20, 20) - 0.5
    assert torch.equal(apply_network(net, params, x), functional_call(net, params, (x,)))


def test_modules_with_hooks_state_or_other_structure_use_functional_call():
    hooked = _droq_like()
    hooked[3].register_forward_hook(lambda m, i, o: o * 2)
    batch_norm = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8))
    nested = nn.Sequential(nn.Sequential(nn.Linear(5, 8)), nn.ReLU())
    reflected = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"))
    for net in (hooked, batch_norm, nested, reflected, funcsac.networks.KeyedDropout(0.1)):
        assert not _is_plain(net)
    params, x = module_params(hooked), torch.randn(4, 5)
    assert torch.equal(apply_network(hooked, params, x), functional_call(hooked, params, (x,)))


def _layers(weight_init):
    cfg = small_config(hidden_sizes=(256, 256), weight_init=weight_init, dtype=torch.float64)
    critic = funcsac.init_state(cfg, seed=0).critic
    return [(critic[f"{i}.weight"][0], critic[f"{i}.bias"][0]) for i in (0, 2, 4)]


@pytest.mark.parametrize("weight_init", ["lecun_normal", "xavier_uniform", "orthogonal"])
def test_the_mlps_weight_inits_draw_their_distributions(weight_init):
    """lecun_normal: a normal truncated at 2 std, variance 1 / fan_in (flax's); xavier_uniform:
    uniform within sqrt(6 / (fan_in + fan_out)); orthogonal: orthonormal rows or columns; every
    bias zero."""
    for w, b in _layers(weight_init):
        fan_out, fan_in = w.shape
        assert torch.equal(b, torch.zeros_like(b))
        if weight_init == "lecun_normal":
            std = math.sqrt(1.0 / fan_in)
            assert w.abs().max() <= 2 * std / 0.87962566103423978
            if w.numel() > 1000:
                assert w.std().item() == pytest.approx(std, rel=0.1)
        elif weight_init == "xavier_uniform":
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            assert w.abs().max() <= bound
            if w.numel() > 1000:
                assert w.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.1)
        else:
            small = w @ w.T if fan_out <= fan_in else w.T @ w
            torch.testing.assert_close(small, torch.eye(len(small), dtype=w.dtype), atol=1e-5,
                                       rtol=0)


def test_torchs_init_is_the_default_and_keeps_its_biases():
    (w, b), *_ = _layers("torch")
    assert b.abs().max() > 0 and w.abs().max() <= 1 / math.sqrt(w.shape[1])
