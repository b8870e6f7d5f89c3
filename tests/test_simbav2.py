"""SimbaV2 (funcsac.variants.simbav2, the reward bound and the learning
rates' decay): the network against a port of SimbaV2's flax layers written op for op, the update
against reference.py's port of its update step by step in float64, compiled against eager,
vmapped against looped, the preset as its config files set it, bad settings refused."""
import math

import numpy as np
import optree
import pytest
import torch

import funcsac
from funcsac.variants.simbav2.network import SimbaV2Net, project_weights
from funcsac.normalize import observe, scale_reward
from funcsac.optim import decayed_lr
from helpers import (BACKENDS, assert_compiled_equals_eager, assert_preset_resumes_exactly,
                     assert_vmap_equals_loop, make_batch, reordered, small_config)
from reference import ReferenceSimbaV2, assert_params_match, check_steps

F64 = torch.float64


def _config(**overrides):
    kw = dict(algorithm="simbav2", network="simbav2", hidden_sizes=(16, 16),
              actor_hidden_sizes=(8,), num_bins=11, v_min=-3.0, v_max=3.0)
    return small_config(**{**kw, **overrides})


def _port(params, x, blocks, heads, c_shift):
    """SimbaV2's ``SimbaV2Actor`` / ``SimbaV2Critic`` forward (simbaV2_layer.py) over the
    parameter dict, op for op: ``l2normalize`` as ``x / max(||x||, 1e-8)``, flax's ``x @
    kernel`` as ``x @ W.T``, ``Scaler`` as ``scaler * (init / scale) * x``."""
    def norm(v):
        return v / torch.clamp(torch.sqrt((v * v).sum(-1, keepdim=True)), min=1e-8)

    def dense(name, v):
        return v @ params[f"{name}.hyper_dense.weight"].T

    w = params["embedder.scaler.scaler"].shape[0]
    y = torch.cat([x, torch.ones(x.shape[:-1] + (1,), dtype=x.dtype) * c_shift], -1)
    y = norm(y)
    # Scaler(init = scale): the parameter times init / scale = 1
    y = params["embedder.scaler.scaler"] * 1.0 * dense("embedder.dense", y)
    z = norm(y)
    for i in range(blocks):
        at, residual = f"blocks.{i}", z
        h = dense(f"{at}.w1", z)
        h = params[f"{at}.scaler.scaler"] * 1.0 * h  # init = scale
        h = torch.relu(h) + 1e-8
        h = norm(dense(f"{at}.w2", h))
        alpha_init, alpha_scale = 1 / (blocks + 1), 1 / math.sqrt(w)
        z = norm(residual + params[f"{at}.alpha.scaler"] * (alpha_init / alpha_scale)
                 * (h - residual))
    outs = []
    for k in range(heads):
        at = f"heads.{k}"
        v = params[f"{at}.scaler.scaler"] * dense(f"{at}.w1", z)
        outs.append(dense(f"{at}.w2", v) + params[f"{at}.bias"])
    return torch.cat(outs, -1)


@pytest.mark.parametrize("blocks,heads", [(1, 2), (2, 1), (3, 3)])
def test_the_network_is_simbav2s_layers(blocks, heads):
    torch.manual_seed(0)
    net = SimbaV2Net(7, 6, 12, blocks, heads, 3.0).to(F64)
    params = {k: v.detach() for k, v in net.named_parameters()}
    # trained weights are not the initial ones: move every parameter
    params = {k: v + 0.1 * torch.randn_like(v) for k, v in params.items()}
    x = 3 * torch.randn(9, 7, dtype=F64)
    got = torch.func.functional_call(net, params, (x,))
    torch.testing.assert_close(got, _port(params, x, blocks, heads, 3.0))


@pytest.mark.parametrize("scalers,embed,block", [
    ("results", lambda w: 1.0, lambda w: 1 / math.sqrt(w)),
    ("release", lambda w: math.sqrt(2 / w), lambda w: math.sqrt(2 / w) / 2)])
def test_it_starts_as_simbav2_on_the_sphere_with_its_scales(scalers, embed, block):
    """hyper_simba_layer.py (the published results' code: the embedding's HyperDense scaler at
    its default 1, the blocks' at 1 / sqrt(w)) or simbaV2_layer.py (sqrt(2 / w), and that over
    sqrt(4) in the blocks); init = scale, so the parameter starts at its effective value."""
    net = SimbaV2Net(5, 4, 32, 2, 2, 3.0, scalers)
    for name, p in net.named_parameters():
        if name.endswith("hyper_dense.weight"):
            torch.testing.assert_close(p.norm(dim=1), torch.ones(p.shape[0]))
    for scaler, value, dim in [(net.embedder.scaler, embed(32), 32),
                               (net.blocks[1].scaler, block(32), 128)]:
        torch.testing.assert_close(scaler(torch.ones(dim)), torch.full((dim,), value))
        torch.testing.assert_close(scaler.scaler.detach(), torch.full((dim,), value))
    torch.testing.assert_close(net.blocks[0].alpha(torch.ones(32)), torch.full((32,), 1 / 3))
    assert float(net.blocks[0].alpha.scaler.detach()[0]) == pytest.approx(1 / math.sqrt(32))
    # the activations between layers are unit vectors
    z = net.blocks(net.embedder(torch.randn(6, 5)))
    torch.testing.assert_close(z.norm(dim=-1), torch.ones(6))


def test_the_scalers_start_changes_adams_steps_not_the_forward():
    torch.manual_seed(0)
    results = SimbaV2Net(5, 4, 32, 2, 2, 3.0, "results").double()
    torch.manual_seed(0)
    release = SimbaV2Net(5, 4, 32, 2, 2, 3.0, "release").double()
    x = torch.randn(7, 5, dtype=F64)
    torch.testing.assert_close(results(x), release(x))
    steps = {}
    for name, net in (("results", results), ("release", release)):
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        net(x).square().sum().backward()
        before = net.embedder.scaler(torch.ones(32, dtype=F64)).detach()
        opt.step()
        after = net.embedder.scaler(torch.ones(32, dtype=F64)).detach()
        steps[name] = ((after - before) / before).abs().max()
    # Adam moves each parameter by about lr: 1e-3 of 1 against 1e-3 of sqrt(2 / 32) = 1/4
    torch.testing.assert_close(steps["results"], torch.tensor(1e-3, dtype=F64), rtol=1e-3,
                               atol=0)
    torch.testing.assert_close(steps["release"], torch.tensor(4e-3, dtype=F64), rtol=1e-3,
                               atol=0)


def test_projection_normalises_the_rows_of_the_bias_free_weights_only():
    w = torch.randn(3, 4, 5)  # a stacked ensemble of 3
    params = {"a.hyper_dense.weight": w, "a.scaler.scaler": torch.randn(4),
              "h.bias": torch.randn(5)}
    out = project_weights(params)
    torch.testing.assert_close(out["a.hyper_dense.weight"], w / w.norm(dim=-1, keepdim=True))
    assert out["a.scaler.scaler"] is params["a.scaler.scaler"]
    assert out["h.bias"] is params["h.bias"]


def test_after_an_update_every_weight_is_back_on_the_sphere():
    cfg = _config()
    state, _ = funcsac.update(funcsac.init_state(cfg, seed=0), make_batch(cfg, batch_size=8))
    for part in (state.actor, state.critic):
        for k, v in part.items():
            if k.endswith("hyper_dense.weight"):
                torch.testing.assert_close(v.norm(dim=-1), torch.ones(v.shape[:-1]))


@pytest.mark.parametrize("num_critics", [1, 2])
def test_update_equals_simbav2s_step_by_step(num_critics):
    """Five updates of float64 agents equal the reference's, state and metrics, with the
    learning rates decaying fast enough to matter (to 0.2 over 3 steps, then constant)."""
    cfg = _config(dtype=F64, num_critics=num_critics, gamma=0.9, lr_decay_to=0.2,
                  lr_decay_steps=3, actor_lr=3e-3, critic_lr=3e-3, alpha_lr=3e-3,
                  init_alpha=0.01, target_entropy_scale=0.5)
    check_steps(cfg, ReferenceSimbaV2)


def test_the_batch_is_normalised_and_the_rewards_bounded_as_simbav2s_wrappers():
    """With running statistics (observations, the discounted return and its largest |value|),
    the update equals the reference's on a batch normalised as SimbaV2's
    ObservationNormalizer and RewardNormalizer write it (numpy's mean and variance)."""
    cfg = _config(dtype=F64, normalize_obs=True, scale_rewards=True, return_bound=0.5)
    state = funcsac.init_state(cfg, seed=1)
    g = torch.Generator().manual_seed(0)
    obs = 2 + 3 * torch.randn(40, cfg.obs_dim, generator=g, dtype=F64)
    returns = 5 * torch.randn(40, generator=g, dtype=F64)
    mask = torch.rand(40, generator=g) < 0.8
    state = observe(state, obs, returns, mask)
    seen_obs, seen_returns = obs[mask].numpy(), returns[mask].numpy()
    torch.testing.assert_close(state.norm["return_max"],
                               torch.tensor(np.abs(seen_returns).max(), dtype=F64))
    ref = ReferenceSimbaV2(state)
    batch = make_batch(cfg, batch_size=16, seed=2)
    mean, var = seen_obs.mean(0), seen_obs.var(0)
    divisor = max(np.sqrt(seen_returns.var() + 1e-8), np.abs(seen_returns).max() / 0.5)
    assert divisor > np.sqrt(seen_returns.var() + 1e-8)  # the bound decides here
    norm = lambda o: ((o - torch.tensor(mean)) / torch.tensor(np.sqrt(var + 1e-8))  # noqa: E731
                      ).clamp(-10, 10)
    ref_batch = batch._replace(obs=norm(batch.obs), next_obs=norm(batch.next_obs),
                               reward=batch.reward / divisor)
    state, metrics = funcsac.update(state, batch)
    for name, value in ref.update(ref_batch).items():
        torch.testing.assert_close(metrics[name], value, **reordered(), msg=name)
    assert_params_match(state, ref)


def test_the_reward_bound_applies_only_above_the_std():
    stats = funcsac.normalize.RunningStats(torch.tensor(5.0, dtype=F64),
                                           torch.tensor(0.0, dtype=F64),
                                           torch.tensor(4.0, dtype=F64))
    norm = {"return": stats, "return_max": torch.tensor(30.0, dtype=F64)}
    reward = torch.tensor([1.0, -2.0])
    torch.testing.assert_close(scale_reward(norm, reward, 5.0), reward / 6.0)   # 30 / 5 > 2
    torch.testing.assert_close(scale_reward(norm, reward, 100.0),
                               reward / math.sqrt(4.0 + 1e-8))                  # 0.3 < 2
    torch.testing.assert_close(scale_reward(norm, reward), reward / math.sqrt(4.0 + 1e-8))


@pytest.mark.parametrize("count,expected", [(0, 1e-4), (500, 0.75e-4), (1000, 5e-5),
                                            (5000, 5e-5)])
def test_the_learning_rate_decays_as_optaxs_linear_schedule(count, expected):
    # optax.linear_schedule(1e-4, 5e-5, 1000)(count)
    lr = decayed_lr(torch.tensor(1e-4, dtype=F64), torch.tensor(count), 0.5, 1000)
    assert float(lr) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_equals_eager(backend):
    cfg = _config(lr_decay_to=0.5, lr_decay_steps=2, normalize_obs=True, scale_rewards=True,
                  return_bound=5.0)
    assert_compiled_equals_eager(cfg, lambda step: make_batch(cfg, batch_size=16, seed=step), 3,
                                 **reordered(torch.float32), backend=backend)


def test_vmapped_agents_train_as_each_alone():
    cfg = _config(dtype=F64, lr_decay_to=0.5, lr_decay_steps=2)
    assert_vmap_equals_loop(cfg, lambda seed: make_batch(cfg, batch_size=16, seed=seed))


@pytest.mark.filterwarnings("ignore:precision bf16 on cpu")  # a CPU without bf16 products
def test_bf16_products_run_under_autocast_and_stay_near_fp32():
    cfg = _config()
    fp32 = funcsac.init_state(cfg, seed=0)
    bf16 = funcsac.init_state(_config(precision="bf16"), seed=0)
    batch = make_batch(cfg, batch_size=16)
    (_, m32), (_, m16) = funcsac.update(fp32, batch), funcsac.update(bf16, batch)
    assert m32["critic_loss"] != m16["critic_loss"]  # the products really are bf16
    torch.testing.assert_close(m16["critic_loss"], m32["critic_loss"], rtol=0.05, atol=0.0)


@pytest.mark.parametrize("bad,message", [
    ({"actor_heads": 3}, r"actor_heads=3 must divide the actor's 4 outputs"),
    ({"c_shift": 0.0}, "SACConfig.c_shift must be a finite number > 0"),
    ({"actor_hidden_sizes": (8, 16)}, "actor_hidden_sizes must have equal entries"),
    ({"return_bound": 5.0}, "return_bound must be None without scale_rewards"),
    ({"lr_decay_to": 1.5}, r"lr_decay_to must be in \[0, 1\]"),
    ({"lr_decay_steps": 0}, "lr_decay_steps must be an integer >= 1"),
])
def test_bad_settings_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        _config(**bad)


def test_the_presets_are_simbav2s_configs():
    from funcsac.driver.presets import preset
    two, one = preset("simbav2", "Hopper-v5"), preset("simbav2-utd1", "Hopper-v5")
    assert (two["utd"], two["lr_decay_steps"], one["utd"], one["lr_decay_steps"]) == (
        2, 2_000_000, 1, 1_000_000)
    cfg = funcsac.SACConfig.of(obs_dim=11, act_dim=3, **{k: v for k, v in two.items()
                                                         if k != "utd"})
    # simbaV2.yaml: 101 bins on [-5, 5] (normalized_g_max 5), lr 1e-4 -> 5e-5, temperature 0.01,
    # target entropy -0.5 act_dim; online_rl.yaml's gamma for 1,000-step episodes
    assert (cfg.algorithm_options.num_bins, cfg.algorithm_options.v_min, cfg.return_bound) == (
        101, -5.0, 5.0)
    assert (cfg.critic_lr, cfg.lr_decay_to, cfg.init_alpha, cfg.target_entropy) == (
        1e-4, 0.5, 0.01, -1.5)
    assert cfg.gamma == max(min((1000 / 5 - 1) / (1000 / 5), 0.995), 0.95)
    # the learnable scales as the code that ran the published results starts them
    assert cfg.network_options.scalers == "results"
    state = funcsac.init_state(cfg, seed=0)
    widths = {k: tuple(v.shape) for k, v in state.critic.items()}
    assert widths["blocks.1.w1.hyper_dense.weight"] == (2, 2048, 512)
    assert widths["heads.0.w2.hyper_dense.weight"] == (2, 101, 512)
    assert len([k for k in state.actor if k.startswith("heads.")]) == 8  # 2 heads of 4 tensors


def test_the_driver_trains_it_with_the_bound_and_the_decay(tmp_path):
    from funcsac.driver.cli import main
    run = tmp_path / "run"
    assert main(["train", "--preset", "simbav2", "--hidden-sizes", "16", "16",
                 "--actor-hidden-sizes", "8", "--total-steps", "300", "--learning-starts", "100",
                 "--eval-every", "300", "--batch-size", "32", "--no-compile", "--no-progress",
                 "--eval-episodes", "1", "--run-dir", str(run)]) == 0
    state = funcsac.load(run).state
    assert float(state.norm["return_max"]) > 0
    assert int(state.critic_opt.count) == 2 * 201  # UTD 2 at env steps 100, 101, ..., 300
    assert all(torch.isfinite(x).all() for x in optree.tree_leaves(state, namespace="funcsac"))


def test_a_run_with_the_bound_and_the_decay_resumes_exactly(tmp_path, monkeypatch):
    """Crashed at its evaluation at 200 and resumed: the same evaluations and final state
    (the return's statistics and its largest |value| among them) as a run that went through."""
    assert_preset_resumes_exactly("simbav2", tmp_path, monkeypatch, actor_hidden_sizes=(8,),
                                  lr_decay_steps=250)


@pytest.mark.slow
def test_simbav2_preset_learns_inverted_pendulum(tmp_path):
    """The simbav2 preset with small networks (critics 64 wide with 2 blocks, actor 32 with 1)
    and 1,000 random steps balances InvertedPendulum-v5 (1,000 steps) within 10,000 env steps
    (at 5,000 its best evaluation was 135)."""
    cfg = funcsac.TrainConfig.from_dict({
        **funcsac.presets.preset("simbav2"), "env_id": "InvertedPendulum-v5",
        "total_steps": 10_000, "learning_starts": 1000, "eval_every": 1000, "eval_episodes": 3,
        "hidden_sizes": (64, 64), "actor_hidden_sizes": (32,), "compile": False,
        "progress": False, "seed": 1})
    result = funcsac.train(cfg, tmp_path)
    assert max(e.return_mean for e in result.evals) >= 1000, [e.return_mean for e in result.evals]


@pytest.mark.slow
def test_simbav2_preset_learns_pendulum(tmp_path):
    """The simbav2 preset (UTD 2, categorical critics, the reward bound, learning rates 1e-4),
    compiled as in real use, with small networks (critics 64 wide with 2 blocks, actor 32 with
    1), SimbaV2's gamma for Pendulum's 200-step episodes (online_rl.yaml: (200 / 5 - 1) / (200 /
    5) = 0.975) and its target entropy of -act_dim / 2, reaches -250 within 5,000 env steps."""
    cfg = funcsac.TrainConfig.from_dict({
        **funcsac.presets.preset("simbav2"), "env_id": "Pendulum-v1", "total_steps": 5000,
        "learning_starts": 1000, "eval_every": 1000, "eval_episodes": 3, "gamma": 0.975,
        "hidden_sizes": (64, 64), "actor_hidden_sizes": (32,), "progress": False, "seed": 1})
    result = funcsac.train(cfg, tmp_path)
    assert max(e.return_mean for e in result.evals) >= -250, [e.return_mean for e in result.evals]
