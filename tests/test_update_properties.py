"""Purity, determinism, vmap over seeds, and learning on a problem with a known answer."""
import optree
import pytest
import torch

import funcsac
from helpers import make_batch, reordered, small_config


def _equal_trees(a, b):
    la, sa = optree.tree_flatten(a, namespace="funcsac")
    lb, sb = optree.tree_flatten(b, namespace="funcsac")
    return sa == sb and all(torch.equal(x, y) for x, y in zip(la, lb))


def test_state_is_a_pytree_with_static_metadata():
    cfg = small_config(num_critics=3)
    state = funcsac.init_state(cfg, seed=0)
    leaves, spec = optree.tree_flatten(state, namespace="funcsac")
    assert all(isinstance(x, torch.Tensor) for x in leaves)
    assert state.critic["0.weight"].shape == (3, 16, 5 + 2)
    rebuilt = optree.tree_unflatten(spec, leaves)
    assert isinstance(rebuilt, funcsac.SACState) and rebuilt.config == cfg
    # hyperparameters are 0-d tensor leaves, sizes are not leaves
    assert all(h.dim() == 0 for h in state.hparams)
    assert _equal_trees(funcsac.init_state(cfg, seed=0), state)


def test_update_is_pure_and_deterministic():
    cfg = small_config(num_critics=3, policy_delay=2)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg)
    state_copy = optree.tree_map(torch.clone, state, namespace="funcsac")
    batch_copy = optree.tree_map(torch.clone, batch, namespace="funcsac")
    out1 = funcsac.update(state, batch)
    assert _equal_trees(state, state_copy) and _equal_trees(batch, batch_copy)
    out2 = funcsac.update(state, batch)
    assert _equal_trees(out1, out2)
    assert not _equal_trees(out1[0].actor, state.actor)
    assert set(out1[1]) >= {"critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy",
                            "q_mean", "critic_grad_norm", "actor_grad_norm"}
    assert all(v.dim() == 0 for v in out1[1].values())


def test_init_leaves_global_rng_alone_and_seeds_differ():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = funcsac.init_state(small_config(), seed=0)
    assert torch.equal(torch.rand(3), expected)
    b = funcsac.init_state(small_config(), seed=1)
    assert not torch.equal(a.actor["0.weight"], b.actor["0.weight"])
    assert not torch.equal(a.critic["0.weight"][0], a.critic["0.weight"][1])
    assert _equal_trees(a.critic, a.target_critic)


def test_vmap_over_seeds_equals_loop():
    cfg = small_config(num_critics=3, num_target_critics=2, policy_delay=2)
    states = [funcsac.init_state(cfg, seed=s) for s in range(4)]
    batches = [make_batch(cfg, seed=s) for s in range(4)]
    stacked = optree.tree_map(lambda *x: torch.stack(x), *states, namespace="funcsac")
    stacked_batch = optree.tree_map(lambda *x: torch.stack(x), *batches, namespace="funcsac")
    step = torch.func.vmap(funcsac.update)
    for _ in range(3):
        stacked, metrics = step(stacked, stacked_batch)
        outs = [funcsac.update(s, b) for s, b in zip(states, batches)]
        states = [o[0] for o in outs]
    for i, s in enumerate(states):
        mine = optree.tree_map(lambda x: x[i], stacked, namespace="funcsac")
        optree.tree_map(lambda x, y: torch.testing.assert_close(x, y, **reordered(cfg.dtype)), mine,
                        s, namespace="funcsac")
        torch.testing.assert_close(metrics["critic_loss"][i], outs[i][1]["critic_loss"],
                                   **reordered(cfg.dtype))


def test_learns_known_optimal_action():
    """One-step task: reward -(a - 0.6)^2 whatever the observation; the policy mean must go
    there."""
    cfg = small_config(obs_dim=2, act_dim=1, hidden_sizes=(32, 32), learn_alpha=False,
                       init_alpha=1e-3, critic_lr=3e-3, actor_lr=3e-3)
    state = funcsac.init_state(cfg, seed=0)
    g = torch.Generator().manual_seed(0)
    for _ in range(600):
        obs = torch.randn(64, 2, generator=g)
        action = torch.rand(64, 1, generator=g) * 2 - 1
        batch = funcsac.Batch(obs, action, -(action[:, 0] - 0.6) ** 2, obs, torch.ones(64))
        state, metrics = funcsac.update(state, batch)
    actions = funcsac.act(state, torch.randn(100, 2, generator=g))
    assert (actions - 0.6).abs().max() < 0.1, actions.flatten()[:10]


def test_fixed_alpha_stays_and_learned_alpha_moves():
    batch = make_batch(small_config())
    fixed = funcsac.init_state(small_config(learn_alpha=False, init_alpha=0.5), seed=0)
    learned = funcsac.init_state(small_config(), seed=0)
    for _ in range(3):
        fixed, _ = funcsac.update(fixed, batch)
        learned, _ = funcsac.update(learned, batch)
    torch.testing.assert_close(fixed.log_alpha.exp(), torch.tensor(0.5))
    assert learned.log_alpha.item() != 0.0


def test_policy_delay_updates_actor_every_kth_step():
    cfg = small_config(policy_delay=3)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg)
    changed = []
    for _ in range(6):
        new, _ = funcsac.update(state, batch)
        changed.append(not torch.equal(new.actor["0.weight"], state.actor["0.weight"]))
        assert not torch.equal(new.critic["0.weight"], state.critic["0.weight"])
        state = new
    assert changed == [True, False, False, True, False, False]


def test_act_shapes_and_stochastic_key():
    cfg = small_config()
    state = funcsac.init_state(cfg, seed=0)
    obs = torch.randn(7, cfg.obs_dim)
    a = funcsac.act(state, obs)
    assert a.shape == (7, 2) and a.abs().max() <= 1
    assert funcsac.act(state, obs[0]).shape == (2,)
    k = funcsac.keys.make_key(0)
    s1 = funcsac.act(state, obs, deterministic=False, key=k)
    assert torch.equal(s1, funcsac.act(state, obs, deterministic=False, key=k))
    assert not torch.equal(s1, a)
    with pytest.raises(ValueError, match="key"):
        funcsac.act(state, obs, deterministic=False)


def _layer_norm_critic(obs_dim, act_dim, hidden_sizes):
    return funcsac.mlp(obs_dim + act_dim, 1, hidden_sizes, layer_norm=True)


def test_custom_critic_factory():
    cfg = small_config(num_critics=3, critic_factory=_layer_norm_critic)
    state = funcsac.init_state(cfg, seed=0)
    assert state.critic["1.weight"].shape == (3, 16)  # the LayerNorm's weight, one per critic
    new, metrics = funcsac.update(state, make_batch(cfg))
    assert torch.isfinite(metrics["critic_loss"])
    assert not torch.equal(new.critic["1.weight"], state.critic["1.weight"])


@pytest.mark.parametrize("with_aux", [False, True])
def test_the_critic_half_is_the_update_where_the_actor_is_not_due(with_aux):
    """With policy_delay 3, steps 1 and 2 of every 3 keep the actor: ``critic_update`` gives
    the same new state as ``update`` there (and the same TD errors), computing no actor step."""
    cfg = small_config(num_critics=3, policy_delay=3)
    fn = funcsac.update_with_aux if with_aux else funcsac.update
    critic_update = funcsac.make_critic_update(with_aux=with_aux)
    state = funcsac.init_state(cfg, seed=0)
    for step in range(6):
        batch = make_batch(cfg, seed=step)
        full = fn(state, batch)
        if step % 3:
            half = critic_update(state, batch)
            assert _equal_trees(half[0], full[0])
            assert set(half[1]) == {"critic_loss", "q_mean", "target_q_mean", "critic_grad_norm"}
            assert _equal_trees(half[1], {k: full[1][k] for k in half[1]})
            assert _equal_trees(half[2:], full[2:])
        state = full[0]
