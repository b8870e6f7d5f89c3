"""What trains: buffers stay out of gradients, Adam and polyak averaging; weight decay masks."""
import optree
import pytest
import torch
from torch import nn

import funcsac
from helpers import make_batch, reordered, small_config


def _batch_norm_critic(obs_dim, act_dim, hidden_sizes):
    h = hidden_sizes[0]
    return nn.Sequential(nn.Linear(obs_dim + act_dim, h), nn.BatchNorm1d(h), nn.ReLU(),
                         nn.Linear(h, 1))


BN = small_config(num_critics=3, critic_factory=_batch_norm_critic)
BUFFERS = ("1.running_mean", "1.running_var", "1.num_batches_tracked")


@pytest.mark.parametrize("compiled", [False, True])
def test_batch_norm_critic_trains_and_keeps_its_buffers(compiled):
    """Compiled with the aot_eager backend: dynamo and AOTAutograd see what inductor would."""
    state = funcsac.init_state(BN, seed=0)
    assert state.critic["1.num_batches_tracked"].dtype == torch.int64
    assert set(state.critic_opt.mu) == set(state.critic) - set(BUFFERS)
    assert set(state.static.critic_trainable) == set(state.critic_opt.nu)
    before = optree.tree_map(torch.clone, state, namespace="funcsac")
    step = funcsac.update
    if compiled:
        torch._dynamo.reset()
        step = torch.compile(funcsac.update, fullgraph=True, backend="aot_eager")
    new = state
    for i in range(3):
        new, metrics = step(new, make_batch(BN, seed=i))
        assert torch.isfinite(metrics["critic_loss"])
    for field in ("critic", "target_critic"):
        for name in BUFFERS:
            assert torch.equal(getattr(new, field)[name], getattr(before, field)[name])
            assert torch.equal(getattr(state, field)[name], getattr(before, field)[name])
    assert not torch.equal(new.critic["1.weight"], before.critic["1.weight"])
    assert not torch.equal(new.target_critic["0.weight"], before.target_critic["0.weight"])
    assert set(new.critic_opt.mu) == set(state.critic_opt.mu)


def _critic_after_one_step(**overrides):
    cfg = small_config(dtype=torch.float64, critic_layer_norm=True, **overrides)
    state = funcsac.init_state(cfg, seed=0)
    return state.critic, funcsac.update(state, make_batch(cfg))[0].critic


@pytest.mark.parametrize("on", ["weights", "all"])
def test_weight_decay_applies_where_configured(on):
    """Decoupled decay subtracts ``lr * wd * p`` from exactly the step taken without decay."""
    lr, wd = 1e-3, 0.1
    old, plain = _critic_after_one_step(critic_lr=lr)
    _, decayed = _critic_after_one_step(critic_lr=lr, weight_decay=wd, weight_decay_on=on)
    # Linear weights (3 dims stacked), then the biases and LayerNorm's weights and biases
    assert {k: old[k].dim() for k in ("0.weight", "0.bias", "1.weight", "1.bias")} == \
        {"0.weight": 3, "0.bias": 2, "1.weight": 2, "1.bias": 2}
    for k, p in old.items():
        if on == "all" or p.dim() >= 3:
            torch.testing.assert_close(plain[k] - decayed[k], lr * wd * p, rtol=1e-9, atol=1e-15)
        else:
            assert torch.equal(decayed[k], plain[k]), k


def test_adam_decay_mask_matches_adamw_param_groups():
    g = torch.Generator().manual_seed(0)
    params = {"w": torch.randn(4, 3, generator=g, dtype=torch.float64),
              "b": torch.randn(3, generator=g, dtype=torch.float64)}
    ref = {k: nn.Parameter(v.clone()) for k, v in params.items()}
    opt = torch.optim.AdamW([{"params": [ref["w"]], "weight_decay": 0.1},
                             {"params": [ref["b"]], "weight_decay": 0.0}], lr=1e-2)
    state, lr = funcsac.adam_init(params), torch.tensor(1e-2, dtype=torch.float64)
    for step in range(20):
        grads = {k: torch.sin(v * (step + 1)) for k, v in params.items()}
        params, state, _ = funcsac.adam_update(grads, state, params, lr, weight_decay=0.1,
                                               decay_mask={"w": True, "b": False})
        for p in ref.values():
            p.grad = torch.sin(p.detach() * (step + 1))
        opt.step()
    for k in params:
        torch.testing.assert_close(params[k], ref[k].detach(), **reordered())


def test_frozen_parameters_are_not_trained():
    def frozen_first_layer(obs_dim, act_dim, hidden_sizes):
        net = funcsac.mlp(obs_dim + act_dim, 1, hidden_sizes)
        net[0].requires_grad_(False)
        return net

    cfg = small_config(critic_factory=frozen_first_layer)
    state = funcsac.init_state(cfg, seed=0)
    assert "0.weight" not in state.critic_opt.mu and "2.weight" in state.critic_opt.mu
    new, _ = funcsac.update(state, make_batch(cfg))
    assert torch.equal(new.critic["0.weight"], state.critic["0.weight"])
    assert torch.equal(new.target_critic["0.bias"], state.target_critic["0.bias"])
    assert not torch.equal(new.critic["2.weight"], state.critic["2.weight"])
