"""Discrete SAC: the categorical policy family and its losses against an independent imperative
implementation, compiled == eager, vmap == loop, and the driver on a Discrete action space."""
import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

import funcsac
from funcsac import keys
from funcsac.driver.envs.spec import check_spaces, scale_action
from funcsac.variants.discrete import algorithm as discrete
from helpers import (BACKENDS, TINY, assert_compiled_equals_eager, assert_states_equal,
                     assert_vmap_equals_loop, crash_then_resume, eval_rows, reordered)

N_ACTIONS = 3


def discrete_config(**overrides):
    kw = dict(obs_dim=4, act_dim=N_ACTIONS, hidden_sizes=(16, 16), policy="categorical")
    kw.update(overrides)
    return funcsac.SACConfig.of(**kw)


def discrete_batch(cfg, batch_size=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    B, dt = batch_size, cfg.dtype
    return funcsac.Batch(
        obs=torch.randn(B, cfg.obs_dim, generator=g, dtype=dt),
        action=torch.randint(0, cfg.act_dim, (B, 1), generator=g).to(dt),
        reward=torch.randn(B, generator=g, dtype=dt),
        next_obs=torch.randn(B, cfg.obs_dim, generator=g, dtype=dt),
        terminated=torch.rand(B, generator=g) < 0.2)


class ReferenceDiscreteSAC:
    """SAC-Discrete written plainly: nn.Module networks, a Python loop over critics, sums over
    actions spelled out, torch.autograd and torch.optim.Adam."""

    def __init__(self, state):
        cfg = self.cfg = state.config
        net = lambda out: funcsac.mlp(cfg.obs_dim, out, cfg.hidden_sizes).to(cfg.dtype)  # noqa
        self.actor = net(cfg.act_dim)
        self.actor.load_state_dict(state.actor)
        self.critics = []
        for i in range(cfg.num_critics):
            critic = net(cfg.act_dim)
            critic.load_state_dict({k: v[i] for k, v in state.critic.items()})
            self.critics.append(critic)
        self.targets = [copy.deepcopy(c) for c in self.critics]
        self.log_alpha = nn.Parameter(state.log_alpha.clone())
        kw = dict(betas=cfg.adam_betas, eps=cfg.adam_eps)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, **kw)
        self.critic_opt = torch.optim.Adam([p for c in self.critics for p in c.parameters()],
                                           lr=cfg.critic_lr, **kw)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr, **kw)

    def step(self, b):
        cfg, alpha = self.cfg, self.log_alpha.exp().detach()
        B, n = len(b.reward), cfg.act_dim
        with torch.no_grad():
            probs = torch.softmax(self.actor(b.next_obs), -1)
            q_next = [t(b.next_obs) for t in self.targets]
            target = torch.empty(B, dtype=cfg.dtype)
            for i in range(B):
                value = sum(probs[i, a] * (min(q[i, a] for q in q_next)
                                           - alpha * torch.log(probs[i, a])) for a in range(n))
                target[i] = b.reward[i] + cfg.gamma * (1.0 - float(b.terminated[i])) * value
        loss = 0.0
        for c in self.critics:
            q = c(b.obs)
            taken = torch.stack([q[i, int(b.action[i, 0])] for i in range(B)])
            loss = loss + 0.5 * ((taken - target) ** 2).mean()
        self.critic_opt.zero_grad()
        loss.backward()
        self.critic_opt.step()
        with torch.no_grad():
            for c, t in zip(self.critics, self.targets):
                for pc, pt in zip(c.parameters(), t.parameters()):
                    pt.add_(cfg.tau * (pc - pt))
        probs = torch.softmax(self.actor(b.obs), -1)
        with torch.no_grad():
            qs = [c(b.obs) for c in self.critics]
            q_min = torch.stack([torch.stack([min(q[i, a] for q in qs) for a in range(n)])
                                 for i in range(B)])
        log_p = torch.log(probs)
        actor_loss = (probs * (alpha * log_p - q_min)).sum(-1).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        neg_entropy = (probs * log_p).sum(-1).detach()
        alpha_loss = -self.log_alpha * (neg_entropy + cfg.target_entropy).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        return {"critic_loss": loss.detach(), "actor_loss": actor_loss.detach(),
                "entropy": -neg_entropy.mean(), "target_q_mean": target.mean()}


def test_update_equals_an_independent_implementation_for_five_steps():
    cfg = discrete_config(dtype=torch.float64, actor_lr=1e-2, critic_lr=1e-2, alpha_lr=1e-2)
    state = funcsac.init_state(cfg, seed=3)
    reference = ReferenceDiscreteSAC(state)
    assert cfg.target_entropy == pytest.approx(0.25 * math.log(N_ACTIONS))
    for step in range(5):
        batch = discrete_batch(cfg, seed=step)
        state, metrics = funcsac.update(state, batch)
        expected = reference.step(batch)
        for name, value in expected.items():
            torch.testing.assert_close(metrics[name], value, **reordered())
        torch.testing.assert_close(state.actor, reference.actor.state_dict(), **reordered())
        for i, (c, t) in enumerate(zip(reference.critics, reference.targets)):
            torch.testing.assert_close({k: v[i] for k, v in state.critic.items()},
                                       c.state_dict(), **reordered())
            torch.testing.assert_close({k: v[i] for k, v in state.target_critic.items()},
                                       t.state_dict(), **reordered())
        torch.testing.assert_close(state.log_alpha, reference.log_alpha.detach(), **reordered())


def test_sampled_actions_follow_the_policy_and_random_ones_are_uniform():
    cfg = discrete_config(dtype=torch.float64)
    state = funcsac.init_state(cfg, seed=0)
    obs = torch.randn(1, cfg.obs_dim, dtype=torch.float64).expand(60_000, -1)
    probs = torch.softmax(discrete.apply_logits(state.static.actor, state.actor,
                                                        obs[:1]), -1)[0]
    for sample, expected in (
            (funcsac.act(state, obs, deterministic=False, key=keys.make_key(1)), probs),
            (discrete.Categorical().random_action(
                keys.normal(keys.make_key(2), (60_000, N_ACTIONS), torch.float64)),
             torch.full((N_ACTIONS,), 1.0 / N_ACTIONS, dtype=torch.float64))):
        assert sample.shape == (60_000, 1) and sample.dtype == torch.float64
        counts = torch.bincount(sample[:, 0].long(), minlength=N_ACTIONS).double()
        chi2 = ((counts - 60_000 * expected) ** 2 / (60_000 * expected)).sum().item()
        assert chi2 < 13.816  # chi-square critical value, 2 degrees of freedom, p = 0.001
    assert torch.equal(funcsac.act(state, obs[:1]), probs.argmax().reshape(1, 1).double())


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_update_equals_eager_without_recompiles(backend):
    cfg = discrete_config(num_critics=3, num_target_critics=2, critic_dropout=0.1,
                          critic_layer_norm=True)
    assert_compiled_equals_eager(cfg, lambda step: discrete_batch(cfg, seed=step), 3, 1e-4, 1e-5,
                                 backend)


def test_vmap_over_agents_equals_a_loop():
    cfg = discrete_config(dtype=torch.float64, num_critics=3, num_target_critics=2)
    assert_vmap_equals_loop(cfg, lambda seed: discrete_batch(cfg, seed=seed))


def test_bad_actions_and_settings_are_refused():
    cfg = discrete_config()
    batch = discrete_batch(cfg)
    for bad in (3.0, -1.0, 0.5):
        action = batch.action.clone()
        action[0, 0] = bad
        with pytest.raises(ValueError, match=r"action indices in \[0, act_dim\)"):
            funcsac.check_batch(batch._replace(action=action), cfg)
    with pytest.raises(ValueError, match=r"Batch.action: expected shape \[32, 1\]"):
        funcsac.check_batch(batch._replace(action=batch.action.expand(-1, 3)), cfg)
    with pytest.raises(ValueError, match="SACConfig.policy must be one of"):
        discrete_config(policy="beta")
    with pytest.raises(ValueError, match="for the categorical policy"):
        discrete_config(algorithm="nonexistent")


def test_spaces_and_action_conversion():
    import gymnasium as gym
    box = gym.spaces.Box(-1.0, 1.0, (4,))
    spec = check_spaces("x", box, gym.spaces.Discrete(5, start=2))
    assert spec.discrete and spec.act_dim == 5 and spec.action_size == 1
    assert spec.policy == "categorical"
    assert scale_action(np.array([[0.0], [4.0]]), spec).tolist() == [2, 6]
    assert scale_action(torch.tensor([[1.0]]), spec).tolist() == [3]
    with pytest.raises(ValueError, match="unsupported action space"):
        check_spaces("x", box, gym.spaces.MultiDiscrete([2, 3]))


CARTPOLE = dict(TINY, env_id="CartPole-v1", total_steps=600, learning_starts=200, eval_every=200,
                checkpoint_every=200, seed=3)


def test_cartpole_trains_resumes_exactly_loads_and_exports(tmp_path, monkeypatch):
    cfg = funcsac.TrainConfig(**CARTPOLE)
    first = funcsac.train(cfg, tmp_path / "a")
    assert first.state.config.policy == "categorical"
    resumed = crash_then_resume(cfg, tmp_path / "b", monkeypatch, 600)
    assert eval_rows(tmp_path / "b") == eval_rows(tmp_path / "a")
    assert_states_equal(resumed.state, first.state)
    agent = funcsac.load(tmp_path / "a")
    obs = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    actions = agent.act(obs)
    assert actions.dtype == np.int64 and actions.shape == (5,) and set(actions) <= {0, 1}
    from funcsac.driver.tools.export import export_policy
    export_policy(agent, tmp_path / "policy.pt2", "torch-export")
    exported = torch.export.load(str(tmp_path / "policy.pt2")).module()
    assert exported(torch.from_numpy(obs)).tolist() == actions.tolist()
    with pytest.raises(ValueError, match="discrete actions"):
        funcsac.train(funcsac.TrainConfig(**{**CARTPOLE, "offline_data": str(tmp_path / "d.npz")}),
                      tmp_path / "c")


@pytest.mark.slow
def test_cartpole_reaches_500(tmp_path):
    """Discrete SAC solves CartPole-v1, 3 vmapped seeds, gamma 0.999 (its 500-step episodes need
    a longer horizon than 0.99's 100 steps; with 0.99 the returns stayed near 450): one seed
    evaluates at 500 within 10,000 env steps, and every seed at >= 475 at 25,000 (measured: 500
    at 9,000 for seed 3; 500, 490, 500 at 25,000)."""
    cfg = funcsac.TrainConfig(env_id="CartPole-v1", total_steps=25_000, learning_starts=1000,
                              eval_every=1000, eval_episodes=5, hidden_sizes=(64, 64), seed=1,
                              num_seeds=3, gamma=0.999, checkpoint_every=0, progress=False)
    evals = funcsac.train(cfg, tmp_path).evals
    assert max(e.return_mean for e in evals if e.step <= 10_000) >= 500, evals
    assert min(e.return_mean for e in evals if e.step == 25_000) >= 475, evals


def test_the_default_exploration_reaches_mountaincars_goal():
    """MountainCar-v0 pays -1 a step until the car reaches the hilltop, which takes swinging
    back and forth first. Random actions drawn afresh each step (as the policy's noise was
    before the family held it) dither in place: 0 goals in 20,000 steps for each of seeds 1-3,
    and learning never starts (seed 1 stayed at -200 for 120,000 steps). The categorical
    family's default hold (``default_noise_hold``, a draw kept for 1-32 steps) reaches it 4-8
    times each in as many steps."""
    import gymnasium as gym
    from funcsac.noise import held_noise
    family = funcsac.registry.POLICIES["categorical"]

    def goals(seed: int, hold: float, hold_max: int, steps: int = 20_000) -> int:
        k_noise, k_hold = keys.split(keys.make_key(seed), 2)
        noise = keys.normal(k_noise, (steps, 1, 3), torch.float64)
        if hold:
            noise = held_noise(noise, k_hold, hold, hold_max)
        env, reached = gym.make("MountainCar-v0"), 0
        env.reset(seed=seed)
        for action in family.random_action(noise[:, 0]).view(-1).long().tolist():
            _, _, terminated, truncated, _ = env.step(action)
            reached += terminated
            if terminated or truncated:
                env.reset()
        return reached

    assert [goals(s, 0.0, 1) for s in (1, 2, 3)] == [0, 0, 0]
    held = [goals(s, family.default_noise_hold, family.default_noise_hold_max) for s in (1, 2, 3)]
    assert min(held) >= 3, held


@pytest.mark.slow
def test_acrobot_learns_with_the_defaults(tmp_path):
    """Acrobot-v1 (-1 a step until the goal, 500-step truncation) learns with discrete SAC's
    defaults alone: each of 3 vmapped seeds evaluates at -120 or better within 25,000 steps
    (passed on an AMD EPYC; seeds 4-6 reach it for 2 of 3). With the former defaults (target
    entropy 0.89 log n, one-step transitions) every evaluation stayed at -500: a near-uniform
    policy rarely reaches the goal, and the goal's value crosses the episode too slowly; with
    learning after 5,000 steps 1 of seeds 1-6 reached it (``Categorical``'s docstring)."""
    cfg = funcsac.TrainConfig(env_id="Acrobot-v1", total_steps=25_000, eval_every=2500,
                              eval_episodes=5, seed=1, num_seeds=3, checkpoint_every=0,
                              progress=False)
    # the family's defaults: 3-step transitions, 0.25 log n, learning after 2,000 random steps,
    # each noise draw held 1-32 steps
    assert cfg.n_step is None and cfg.target_entropy is None and cfg.learning_starts is None
    assert cfg.noise_hold is None and cfg.noise_hold_max is None
    evals = funcsac.train(cfg, tmp_path).evals
    best = [max(e.return_mean for e in evals if e.agent == i) for i in range(3)]
    assert min(best) >= -120, evals
