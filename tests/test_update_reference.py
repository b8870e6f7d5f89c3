"""funcsac's update against the independent imperative implementation in reference.py."""
import pytest
import torch

import funcsac
from helpers import make_batch, small_config, with_horizons_and_weights
from reference import ReferenceDroQ, ReferenceSAC, assert_params_match, step_both

CASES = {
    "n1": dict(num_critics=1),
    "n2": dict(num_critics=2),
    "redq_n5_m2": dict(num_critics=5, num_target_critics=2),
    "n5_m5_mean_actor": dict(num_critics=5, num_target_critics=5, actor_q_reduction="mean"),
    "delay3": dict(policy_delay=3),
    "targets_every3": dict(target_update_every=3),
    "fixed_alpha": dict(learn_alpha=False, init_alpha=0.3),
    "adamw_clip": dict(weight_decay=0.01, max_grad_norm=1.0),
    "adamw_all": dict(weight_decay=0.01, weight_decay_on="all"),
    "horizon_weight": dict(),  # n-step horizons and importance weights in the batch
    "privileged": dict(privileged_dim=2),  # observations end in 2 numbers only critics see
    # the log-std clipped (REDQ, TQC, sbx), with bounds that clip some of the raw values
    "log_std_clip_xavier": dict(log_std_squash="clip", log_std_min=-0.05, log_std_max=0.05,
                                weight_init="xavier_uniform"),
}


@pytest.mark.parametrize("case", CASES)
def test_update_matches_reference(case):
    cfg = small_config(dtype=torch.float64, gamma=0.9, tau=0.05, actor_lr=1e-3, **CASES[case])
    state = funcsac.init_state(cfg, seed=1)
    ref = ReferenceSAC(state)
    for step in range(7):
        batch = make_batch(cfg, seed=step)
        if case == "horizon_weight":
            batch = with_horizons_and_weights(batch, 100 + step)
        if cfg.log_std_squash == "clip":  # both sides of the bounds occur
            raw = ref.actor(batch.obs).chunk(2, dim=-1)[1]
            assert (raw.abs() > 0.05).any() and (raw.abs() < 0.05).any()
        state = step_both(state, ref, batch, step)
    assert_params_match(state, ref)
    assert state.step.item() == 7


@pytest.mark.parametrize("case", [
    dict(num_critics=2, actor_q_reduction="mean", policy_delay=3),  # DroQ's
    dict(num_critics=5, num_target_critics=2, policy_delay=1),  # with REDQ's random subset
])
def test_dropout_critics_update_matches_reference(case):
    cfg = small_config(dtype=torch.float64, critic_dropout=0.2, critic_layer_norm=True,
                       weight_init="xavier_uniform", log_std_squash="clip", log_std_min=-20.0,
                       **case)
    state = funcsac.init_state(cfg, seed=3)
    ref = ReferenceDroQ(state)
    for step in range(7):
        state = step_both(state, ref, make_batch(cfg, seed=20 + step), step)
    assert_params_match(state, ref)


@pytest.mark.parametrize("weighted", [False, True])
def test_critic_gradients_match_autograd(weighted):
    cfg = small_config(dtype=torch.float64, num_critics=3)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg)
    target = torch.randn(32, dtype=torch.float64)
    # importance weights (prioritized replay) scale each row's squared error
    weight = (torch.rand(32, dtype=torch.float64) * 2 if weighted
              else torch.ones(32, dtype=torch.float64))
    batch = batch._replace(weight=weight)
    grads = torch.func.grad(lambda p: funcsac.critic_loss(p, state, batch, target, None)[0])(
        state.critic)
    ref = ReferenceSAC(state)
    sa = torch.cat([batch.obs, batch.action], -1)
    loss = sum(0.5 * (weight * (c(sa).squeeze(-1) - target) ** 2).mean() for c in ref.critics)
    loss.backward()
    for i, c in enumerate(ref.critics):
        for k, p in c.named_parameters():
            torch.testing.assert_close(grads[k][i], p.grad)


def test_actor_gradient_leaves_critics_alone():
    cfg = small_config(dtype=torch.float64)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg)
    key = funcsac.keys.make_key(5)
    alpha = torch.tensor(0.2, dtype=torch.float64)
    state = state.replace(log_alpha=alpha.log())
    grads = torch.func.grad(lambda p: funcsac.actor_loss(p, state, batch, key)[0])(state.actor)
    ref = ReferenceSAC(state)
    a, logp = ref.sample(batch.obs, funcsac.keys.split(key, 2)[0])
    q = torch.stack([c(torch.cat([batch.obs, a], -1)).squeeze(-1)
                     for c in ref.critics]).min(0).values
    (alpha * logp - q).mean().backward()
    for k, p in ref.actor.named_parameters():
        torch.testing.assert_close(grads[k], p.grad)
