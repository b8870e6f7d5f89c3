"""Replacing or extending one loss without copying update."""
import pytest
import torch
import torch.nn.functional as F

import funcsac
from funcsac.losses import sample_action
from funcsac.networks import apply_critics
from funcsac.steps import step_keys
from helpers import make_batch, small_config

CFG = small_config(dtype=torch.float64)


def huber_critic_loss(delta):
    def loss(critic, state, batch, target, key):
        q = apply_critics(state.static.critic, critic, batch.obs, batch.action, key)
        huber = F.huber_loss(q, target.expand_as(q), delta=delta, reduction="none")
        return (batch.weight * huber).mean(-1).sum(0), funcsac.CriticOut(q, target)
    return loss


def test_huber_critic_loss():
    state, batch = funcsac.init_state(CFG, seed=0), make_batch(CFG)
    default, m_default = funcsac.update(state, batch)
    # Huber with a huge delta is 0.5 * squared error: the default loss exactly
    wide, m_wide = funcsac.make_update(funcsac.Losses(critic=huber_critic_loss(1e9)))(state, batch)
    torch.testing.assert_close(wide.critic, default.critic)
    torch.testing.assert_close(m_wide["critic_loss"], m_default["critic_loss"])
    narrow_update = funcsac.make_update(funcsac.Losses(critic=huber_critic_loss(0.1)))
    narrow, m_narrow = narrow_update(state, batch)
    k_target, _ = funcsac.keys.split(step_keys(state)[1], 2)
    err = apply_critics(state.static.critic, state.critic, batch.obs, batch.action) - \
        funcsac.td_target(state, batch, k_target)
    expected = torch.where(err.abs() < 0.1, 0.5 * err ** 2, 0.1 * (err.abs() - 0.05))
    torch.testing.assert_close(m_narrow["critic_loss"], expected.mean(-1).sum())
    assert not torch.allclose(narrow.critic["0.weight"], default.critic["0.weight"])


def test_extra_actor_penalty():
    coef = 0.01

    def penalised(actor, *args):
        loss, log_prob = funcsac.actor_loss(actor, *args)
        return loss + coef * sum(p.square().sum() for p in actor.values()), log_prob

    state, batch = funcsac.init_state(CFG, seed=0), make_batch(CFG)
    _, m_default = funcsac.update(state, batch)
    new, m = funcsac.make_update(funcsac.Losses(actor=penalised))(state, batch)
    penalty = coef * sum(p.square().sum() for p in state.actor.values())
    torch.testing.assert_close(m["actor_loss"], m_default["actor_loss"] + penalty)
    # the actor step differentiates the penalised loss (against the critics after their step,
    # the temperature before its own)
    k_actor = step_keys(state)[2]
    after_critics = new.replace(log_alpha=state.log_alpha)
    grad = torch.func.grad(lambda a: penalised(a, after_critics, batch, k_actor)[0])(state.actor)
    torch.testing.assert_close(m["actor_grad_norm"], funcsac.global_norm(grad))


def test_replaced_target():
    # a target of the reward alone is the default target with gamma = 0, exactly
    state, batch = funcsac.init_state(CFG, seed=0), make_batch(CFG)
    myopic = funcsac.make_update(funcsac.Losses(target=lambda state, batch, key: batch.reward))
    new, m = myopic(state, batch)
    zero = state.replace(hparams=state.hparams._replace(gamma=torch.zeros((), dtype=torch.float64)))
    expected, m_expected = funcsac.update(zero, batch)
    torch.testing.assert_close(m["target_q_mean"], batch.reward.mean())
    torch.testing.assert_close(new.critic, expected.critic, rtol=0, atol=0)
    torch.testing.assert_close(m["critic_loss"], m_expected["critic_loss"], rtol=0, atol=0)
    _, m_default = funcsac.update(state, batch)
    assert not torch.allclose(m["critic_loss"], m_default["critic_loss"])


@pytest.mark.parametrize("how", ["min", "mean"])
def test_the_td_target_combines_the_target_critics_as_configured(how):
    """``target_q_reduction``: the min (SAC) or the mean (BRO) of the target critics' values at
    ``(s', a')``, written out for 3 critics."""
    cfg = small_config(num_critics=3, num_target_critics=3, target_q_reduction=how,
                       dtype=torch.float64, init_alpha=0.3, gamma=0.9)
    state, batch = funcsac.init_state(cfg, seed=0), make_batch(cfg, batch_size=8)
    key = funcsac.keys.make_key(5)
    k_action = funcsac.keys.split(key, 2)[0]
    a, log_prob = sample_action(state.actor, state.static, batch.next_obs, k_action)
    q = [funcsac.apply_critic(state.static.critic, {k: v[i] for k, v in
                                                    state.target_critic.items()},
                              batch.next_obs, a) for i in range(3)]
    combined = torch.minimum(torch.minimum(q[0], q[1]), q[2]) if how == "min" else sum(q) / 3
    not_done = 1.0 - batch.terminated.double()
    expected = batch.reward + 0.9 * not_done * (combined - 0.3 * log_prob)
    torch.testing.assert_close(funcsac.td_target(state, batch, key), expected)
