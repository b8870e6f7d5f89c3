"""CrossQ: batch renormalisation by hand, the joint-pass critic loss and its gradients against an
independent implementation, running statistics as state, compiled == eager, vmap == loop, and
the preset through the driver."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import funcsac
from funcsac.batch_renorm import BatchRenorm, batch_renorm
from funcsac.variants.crossq.algorithm import crossq_critic_loss, crossq_target
from helpers import (BACKENDS, TINY, assert_compiled_equals_eager, assert_states_equal,
                     assert_vmap_equals_loop, crash_then_resume, eval_rows, make_batch, reordered)
from reference import ReferenceCrossQ, assert_params_match, step_both

CROSSQ = funcsac.presets.preset("crossq")


def crossq_config(**overrides):
    return funcsac.SACConfig.of(**{**CROSSQ, "obs_dim": 5, "act_dim": 2, "hidden_sizes": (16, 16),
                                   "actor_hidden_sizes": (), **overrides})


def test_batch_renorm_by_hand():
    layer = BatchRenorm(3, momentum=0.1, eps=1e-3, r_max=1.5, d_max=0.5, warmup_steps=2)
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, (8, 3))
    params = {"weight": torch.tensor([1.0, 2.0, 0.5]), "bias": torch.tensor([0.0, 1.0, -1.0]),
              "running_mean": torch.tensor([0.5, 1.0, 2.0]),
              "running_var": torch.tensor([1.0, 4.0, 9.0]), "steps": torch.tensor(0.0)}
    params = {k: v.double() for k, v in params.items()}
    w, b = params["weight"].numpy(), params["bias"].numpy()
    mu, var = x.mean(0), x.var(0)
    run_mu, run_var = params["running_mean"].numpy(), params["running_var"].numpy()
    for steps, warm in ((1.0, False), (2.0, True)):
        y, new = batch_renorm(layer, {**params, "steps": torch.tensor(steps).double()}, "",
                              torch.from_numpy(x), train=True)
        # sbx's jax_layers.BatchRenorm: the batch's statistics corrected by r and d
        std, run_std = np.sqrt(var + 1e-3), np.sqrt(run_var + 1e-3)
        r = np.clip(std / run_std, 1 / 1.5, 1.5) if warm else 1.0
        d = np.clip((mu - run_mu) / run_std, -0.5, 0.5) if warm else 0.0
        if warm:  # both clips bind somewhere
            assert (np.abs(d) == 0.5).any() and (np.abs(d) < 0.5).any()
        custom_mean, custom_var = mu - d * np.sqrt(var) / r, var / r ** 2
        np.testing.assert_allclose(y.numpy(), (x - custom_mean) / np.sqrt(custom_var + 1e-3) * w
                                   + b, **reordered())
        np.testing.assert_allclose(new["running_mean"].numpy(), run_mu + 0.1 * (mu - run_mu))
        np.testing.assert_allclose(new["running_var"].numpy(), run_var + 0.1 * (var - run_var))
        assert new["steps"].item() == steps + 1
    y, new = batch_renorm(layer, params, "", torch.from_numpy(x), train=False)
    assert new is None
    np.testing.assert_allclose(y.numpy(), (x - run_mu) / np.sqrt(run_var + 1e-3) * w + b)


def reference_critic_loss(critic, cfg, batch, target):
    """The critic loss with every critic run separately by hand: batch renormalisation (in
    warm-up: batch normalisation) of the joint batch at the input and after each ReLU (sbx's
    order), linear layers written out."""
    obs, action, weight = batch.obs, batch.action, batch.weight
    x_all = torch.cat([torch.cat([obs, action], -1),
                       torch.cat([batch.next_obs, target["next_action"]], -1)])
    B, qs = obs.shape[0], []
    for i in range(cfg.num_critics):
        p = {k: v[i] for k, v in critic.items()}

        def norm(name, x):
            mean, var = x.mean(0), ((x - x.mean(0)) ** 2).mean(0)
            return (x - mean) / torch.sqrt(var + 1e-3) * p[name + ".weight"] + p[name + ".bias"]

        x = norm("0", x_all)
        for lin, bn in (("1", "3"), ("4", "6")):
            x = norm(bn, torch.relu(x @ p[lin + ".weight"].T + p[lin + ".bias"]))
        qs.append((x @ p["7.weight"].T + p["7.bias"])[:, 0])
    q = torch.stack(qs)
    discount = cfg.gamma ** batch.horizon * (1.0 - batch.terminated.double())
    y = batch.reward + discount * (q[:, B:].detach().min(0).values + target["bonus"])
    loss = sum(0.5 * (weight * (q[i, :B] - y) ** 2).mean() for i in range(cfg.num_critics))
    return loss, y


def test_joint_pass_loss_and_gradients_equal_an_independent_implementation():
    cfg = crossq_config(dtype=torch.float64, num_critics=3, num_target_critics=3)
    state = funcsac.init_state(cfg, seed=1)
    # trained-looking weights: batch renormalisation's scales and shifts away from 1 and 0
    g = torch.Generator().manual_seed(2)
    critic = {k: v + 0.1 * torch.randn(v.shape, generator=g, dtype=v.dtype)
              if k.endswith(("weight", "bias")) else v for k, v in state.critic.items()}
    batch = make_batch(cfg, seed=3)._replace(weight=torch.rand(32, generator=g).double())
    target = crossq_target(state, batch, funcsac.keys.make_key(4))
    args = (state, batch, target, funcsac.keys.make_key(5))
    names = list(state.static.critic_trainable)
    grads, (loss, aux) = torch.func.grad_and_value(
        lambda p: crossq_critic_loss({**critic, **p}, *args), has_aux=True)(
        {k: critic[k] for k in names})
    leaves = {k: critic[k].clone().requires_grad_(True) for k in names}
    ref_loss, ref_y = reference_critic_loss({**critic, **leaves}, cfg, batch, target)
    ref_grads = torch.autograd.grad(ref_loss, list(leaves.values()))
    torch.testing.assert_close(loss, ref_loss, **reordered())
    torch.testing.assert_close(aux.target, ref_y, **reordered())
    for name, ref in zip(names, ref_grads):
        torch.testing.assert_close(grads[name], ref, **reordered())
    # the new running statistics: those of the joint batch at the input layer
    x = torch.cat([torch.cat([batch.obs, batch.action], -1),
                   torch.cat([batch.next_obs, target["next_action"]], -1)])
    torch.testing.assert_close(aux.buffers["0.running_mean"],
                               0.01 * x.mean(0).expand(3, -1), **reordered())


def _running_stats_scrambled(params, seed, steps):
    """``params`` with running statistics far from a fresh layer's (so that renormalisation's
    clips bind) and every layer's step count at ``steps``."""
    g = torch.Generator().manual_seed(seed)
    new = dict(params)
    for k, v in params.items():
        if k.endswith("running_mean"):
            new[k] = 3.0 * torch.randn(v.shape, generator=g, dtype=v.dtype)
        elif k.endswith("running_var"):
            new[k] = torch.empty(v.shape, dtype=v.dtype).uniform_(0.05, 20.0, generator=g)
        elif k.endswith("steps"):
            new[k] = torch.full_like(v, float(steps))
    return new


def test_update_equals_sbx_crossq_ported_step_by_step():
    """Seven updates (actor steps at 0, 3 and 6) equal sbx's CrossQ ported op for op in float64:
    batch normalisation for the first two, then (the layers' step counts past the warm-up)
    batch renormalisation with its clips binding."""
    cfg = crossq_config(dtype=torch.float64, actor_hidden_sizes=(8, 8))
    state = funcsac.init_state(cfg, seed=1)
    warmup = BatchRenorm(1).warmup_steps
    state = state.replace(critic=_running_stats_scrambled(state.critic, 2, warmup - 2),
                          actor=_running_stats_scrambled(state.actor, 3, warmup - 2))
    ref = ReferenceCrossQ(state)
    for step in range(7):
        state = step_both(state, ref, make_batch(cfg, seed=10 + step), step)
    assert_params_match(state, ref)
    assert state.critic["0.steps"].tolist() == [warmup + 5] * 2


def test_renormalisation_of_a_constant_feature_has_finite_gradients():
    layer = BatchRenorm(3).double()
    params = {**dict(layer.named_parameters()), **dict(layer.named_buffers()),
              "steps": torch.tensor(float(layer.warmup_steps), dtype=torch.float64)}
    x = torch.randn(8, 3, dtype=torch.float64)
    x[:, 1] = 0.5  # a ReLU unit's output constant over the batch
    x.requires_grad_(True)
    y, _ = batch_renorm(layer, params, "", x, train=True)
    (y * torch.arange(3.0, dtype=torch.float64)).sum().backward()
    assert torch.isfinite(x.grad).all()


def test_update_keeps_running_statistics_as_state_and_needs_no_target_network():
    cfg = crossq_config(dtype=torch.float64)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg, seed=1)
    new, metrics = funcsac.update(state, batch)
    stats = [k for k in state.critic if k.endswith(("running_mean", "running_var", "steps"))]
    assert stats and not set(stats) & set(state.static.critic_trainable)
    assert not set(stats) & set(new.critic_opt.mu)  # the optimiser never sees them
    for k in stats:
        assert not torch.equal(new.critic[k], state.critic[k]), k
    assert torch.equal(new.critic["0.steps"], torch.ones(2, dtype=torch.float64))
    # no target critics: none in the state, none averaged
    assert state.target_critic == {} and new.target_critic == {}
    with pytest.raises(ValueError, match="target_critic must be empty"):
        funcsac.update(state.replace(target_critic=dict(state.critic)), batch)


def test_the_actor_is_batch_renormalised_and_trains_in_training_mode():
    """sbx's batch_norm_actor: the actor's renormalisation layers follow the input and each
    activation; the actor's step runs them on its batch and keeps their new statistics, while
    the critic's target and acting use the running ones."""
    cfg = crossq_config(dtype=torch.float64)
    state = funcsac.init_state(cfg, seed=0)
    kinds = [type(m).__name__ for m in state.static.actor]
    assert kinds == ["BatchRenorm", "Linear", "ReLU", "BatchRenorm", "Linear", "ReLU",
                     "BatchRenorm", "Linear"]
    batch = make_batch(cfg, seed=1)
    new, _ = funcsac.update(state, batch)  # step 0: the actor's step is due
    assert torch.equal(new.actor["0.steps"], torch.ones((), dtype=torch.float64))
    torch.testing.assert_close(new.actor["0.running_mean"], 0.01 * batch.obs.mean(0))
    later, _ = funcsac.update(new, make_batch(cfg, seed=2))  # step 1: not due, nothing moves
    assert_states_equal(later.actor, new.actor)


def test_the_temperature_keeps_its_own_adam_betas():
    """sbx's CrossQ gives the networks Adam's beta1 0.5 and the temperature the default 0.9."""
    cfg = crossq_config(dtype=torch.float64, policy_delay=1)
    assert cfg.adam_betas == (0.5, 0.999) and cfg.temperature_betas == (0.9, 0.999)

    def log_alpha_after(config, steps=3):
        state = funcsac.init_state(config, seed=0)
        for step in range(steps):
            state, _ = funcsac.update(state, make_batch(config, seed=step))
        return state.log_alpha

    shared = crossq_config(dtype=torch.float64, policy_delay=1, alpha_adam_betas=())
    assert shared.temperature_betas == (0.5, 0.999)
    assert not torch.equal(log_alpha_after(cfg), log_alpha_after(shared))
    explicit = crossq_config(dtype=torch.float64, policy_delay=1,
                             alpha_adam_betas=(0.5, 0.999))
    assert torch.equal(log_alpha_after(explicit), log_alpha_after(shared))


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_update_equals_eager_without_recompiles(backend):
    # float64: the biases before a batch normalisation have a gradient of 0 up to rounding, which
    # Adam's first steps scale to +-lr; float32's rounding (about 1e-9) is above Adam's eps
    cfg = crossq_config(num_critics=3, num_target_critics=2, dtype=torch.float64)
    assert_compiled_equals_eager(cfg, lambda step: make_batch(cfg, seed=step), 3, 1e-7, 1e-9,
                                 backend)


def test_vmap_over_agents_equals_a_loop():
    cfg = crossq_config(dtype=torch.float64)
    assert_vmap_equals_loop(cfg, lambda seed: make_batch(cfg, seed=seed))


def test_a_critic_that_cannot_run_in_training_mode_is_refused():
    class Wrapped(torch.nn.Module):
        def __init__(self, obs_dim, act_dim, hidden_sizes):
            super().__init__()
            self.net = funcsac.mlp(obs_dim + act_dim, 1, hidden_sizes, batch_renorm=True)

        def forward(self, x):
            return self.net(x)

    cfg = crossq_config(critic_factory=Wrapped)
    with pytest.raises(ValueError, match="training-mode batch statistics need"):
        funcsac.update(funcsac.init_state(cfg), make_batch(cfg))


def test_preset_trains_and_resumes_exactly(tmp_path, monkeypatch):
    cfg = funcsac.TrainConfig(**{**CROSSQ, **TINY, "actor_hidden_sizes": (),
                                 "env_id": "Pendulum-v1", "total_steps": 600,
                                 "learning_starts": 200, "eval_every": 200,
                                 "checkpoint_every": 200, "seed": 2})
    first = funcsac.train(cfg, tmp_path / "a")
    resumed = crash_then_resume(cfg, tmp_path / "b", monkeypatch, 600)
    assert eval_rows(tmp_path / "b") == eval_rows(tmp_path / "a")
    assert_states_equal(resumed.state, first.state)
    assert first.state.critic["0.steps"].tolist() == [401.0, 401.0]  # a pass per update


def test_batch_renorm_layer_runs_in_evaluation_mode_as_a_module():
    layer = BatchRenorm(4).double()
    x = torch.randn(6, 4, dtype=torch.float64)
    layer.running_mean.fill_(1.0)
    torch.testing.assert_close(layer(x), (x - 1.0) / np.sqrt(1.0 + 1e-3))
    assert F.relu(layer(x)).shape == (6, 4)


@pytest.mark.slow
def test_preset_learns_pendulum(tmp_path):
    """The crossq preset reaches -250 on Pendulum-v1 (64x64 networks)."""
    cfg = funcsac.TrainConfig.from_dict({
        **CROSSQ, "env_id": "Pendulum-v1", "total_steps": 6000, "learning_starts": 1000,
        "eval_every": 1000, "eval_episodes": 5, "hidden_sizes": (64, 64),
        "actor_hidden_sizes": (), "progress": False, "seed": 1})
    result = funcsac.train(cfg, tmp_path)
    assert max(e.return_mean for e in result.evals) >= -250, [e.return_mean for e in result.evals]
