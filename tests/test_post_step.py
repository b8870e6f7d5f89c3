"""A network variant's post-step hook (``Network.post_step``): a network defined here whose
weights' rows are projected back to unit norm after each optimiser step, as SimbaV2 keeps its
weights on the unit sphere."""
import pytest
import torch

import funcsac
from funcsac.registry import NETWORKS, Network, register
from helpers import BACKENDS, assert_compiled_equals_eager, make_batch, reordered, small_config


def unit_rows(params, options):
    """Each matrix's rows (a critic's stacked ``[N, out, in]`` too) at unit norm."""
    return {k: v / v.norm(dim=-1, keepdim=True) if k.endswith("weight") and v.dim() >= 2 else v
            for k, v in params.items()}


@pytest.fixture
def sphere():
    mlp = NETWORKS["mlp"]

    def build(in_dim, out_dim, hidden_sizes, options, part):  # the mlp at its defaults
        return mlp.build(in_dim, out_dim, hidden_sizes, mlp.options(), part)

    register(Network("sphere", build, post_step=unit_rows,
                     help="an MLP whose weights' rows stay at unit norm"))
    yield "sphere"
    del NETWORKS["sphere"]


def _weights(params):
    return {k: v for k, v in params.items() if k.endswith("weight")}


def test_each_step_keeps_what_the_hook_returns_and_the_targets_average_it(sphere):
    """The same critics (the mlp's build, the same seed) stepped without the hook, then
    projected, are what the hooked update keeps (the actor, stepped against the projected
    critics, then differs from the unhooked one's); the targets average the projected critics;
    every weight's rows are at unit norm."""
    cfg = small_config(network=sphere, network_options=None, dtype=torch.float64)
    plain = funcsac.SACConfig.of(**{**cfg.settings(), "network": "mlp"}, obs_dim=cfg.obs_dim,
                                 act_dim=cfg.act_dim, dtype=torch.float64)
    batch = make_batch(cfg, batch_size=16)
    state = funcsac.init_state(cfg, seed=0)
    before = funcsac.init_state(plain, seed=0)
    new, _ = funcsac.update(state, batch)
    stepped, _ = funcsac.update(before, batch)
    for k, v in unit_rows(stepped.critic, None).items():
        torch.testing.assert_close(new.critic[k], v, **reordered())
    for w in [*_weights(new.actor).values(), *_weights(new.critic).values()]:
        torch.testing.assert_close(w.norm(dim=-1), torch.ones(w.shape[:-1], dtype=w.dtype))
    for k, t in state.target_critic.items():
        expected = t + cfg.tau * (new.critic[k] - t)
        torch.testing.assert_close(new.target_critic[k], expected, **reordered())


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_equals_eager_with_the_hook(sphere, backend):
    cfg = small_config(network=sphere, network_options=None)
    assert_compiled_equals_eager(cfg, lambda step: make_batch(cfg, batch_size=16, seed=step), 2,
                                 **reordered(torch.float32), backend=backend)


def test_a_factorys_network_is_left_as_stepped(sphere):
    cfg = small_config(network=sphere, network_options=None,
                       critic_factory=lambda d, a, h: funcsac.mlp(d + a, 1, h))
    new, _ = funcsac.update(funcsac.init_state(cfg, seed=0), make_batch(cfg, batch_size=16))
    norms = new.critic["0.weight"].norm(dim=-1)
    assert not torch.allclose(norms, torch.ones_like(norms))  # the critics: not projected
    torch.testing.assert_close(new.actor["0.weight"].norm(dim=-1),
                               torch.ones(new.actor["0.weight"].shape[0]))
