"""BRO (funcsac/variants/bro) against the float64 implementation in reference.py written
as BRO's code writes it; its optimistic actor acting, compiled, vmapped, validated, reset,
trained and resumed by the driver, and learning Pendulum."""
import json
import math

import pytest
import torch

import funcsac
from funcsac import keys
from funcsac.variants.bro import algorithm as bro
from funcsac.driver.cli import main
from helpers import (BACKENDS, TINY, assert_compiled_equals_eager, assert_states_equal,
                     assert_vmap_equals_loop, crash_then_resume, make_batch, reordered,
                     small_config, with_horizons_and_weights)
from reference import ReferenceBRO, assert_params_match, step_both

F64 = torch.float64


def _bro(**overrides):
    kw = dict(algorithm="bro", network="bronet", hidden_sizes=(16, 16), actor_hidden_sizes=(8,),
              num_quantiles=5)
    return small_config(**{**kw, **overrides})


def _assert_extra_matches(state, ref):
    expected = ref.params()
    for k, v in expected["extra.actor"].items():
        torch.testing.assert_close(state.extra["actor"][k], v, **reordered())
    for k, v in expected["extra.adjustments"].items():
        torch.testing.assert_close(state.extra["adjustments"][k], v, **reordered())


CASES = {
    "defaults": dict(),
    "pessimism_3_critics_decay": dict(num_critics=3, pessimism=0.5, weight_decay=1e-2,
                                      weight_decay_on="all", kl_target=0.01),
    "horizon_weight_clip": dict(max_grad_norm=1.0, adjustment_lr=1e-2, init_optimism=2.0),
}


@pytest.mark.parametrize("case", CASES)
def test_update_matches_reference_step_by_step(case):
    """Every network, target, temperature, the optimistic actor and both adjustments, and the
    metrics, equal the reference's over 4 steps (an adjustment_lr large enough to move them)."""
    cfg = _bro(dtype=F64, gamma=0.9, tau=0.05, actor_lr=1e-3, **CASES[case])
    state = funcsac.init_state(cfg, seed=1)
    ref = ReferenceBRO(state)
    for step in range(4):
        batch = make_batch(cfg, seed=step)
        if case == "horizon_weight_clip":
            batch = with_horizons_and_weights(batch, 100 + step)
        state = step_both(state, ref, batch, step)
        assert_params_match(state, ref)
        _assert_extra_matches(state, ref)
    moved = state.extra["adjustments"]["optimism"] - bro.adjustment_param(
        cfg.algorithm_options.init_optimism)
    assert moved.abs() > 0


def test_adjustments_start_at_their_initial_values():
    cfg = _bro(init_optimism=3.0, init_kl_weight=0.1)
    extra = funcsac.init_state(cfg, seed=0).extra
    torch.testing.assert_close(bro.adjustment(extra["adjustments"]["optimism"]),
                               torch.tensor(3.0))
    torch.testing.assert_close(bro.adjustment(extra["adjustments"]["kl_weight"]),
                               torch.tensor(0.1))
    # the optimistic head starts near zero (orthogonal, gain 0.01), bias-free
    head = [k for k in extra["actor"] if k.endswith("weight")][-1]
    assert extra["actor"][head].shape == (cfg.act_dim, 8)
    assert not any(k.startswith(head.split(".")[0] + ".bias") for k in extra["actor"])


def test_acting_explores_with_the_optimistic_actor_and_evaluates_with_the_actor():
    """A stochastic action is tanh(mean + shift + 0.75 std noise); a deterministic one the
    actor's tanh(mean), the optimistic actor unused."""
    cfg = _bro(dtype=F64)
    state = funcsac.init_state(cfg, seed=0)
    shifted = dict(state.extra["actor"])
    head = [k for k in shifted if k.endswith("weight")][-1]
    shifted[head] = torch.randn_like(shifted[head])
    state = state.replace(extra={**state.extra, "actor": shifted})
    obs = make_batch(cfg).obs
    noise = torch.randn(32, cfg.act_dim, dtype=F64)
    ref = ReferenceBRO(state)
    with torch.no_grad():
        mean, log_std = ref.dist(obs)
        shift = ref.optimistic(torch.cat([obs, mean], -1))
        expected = torch.tanh(mean + shift + 0.75 * log_std.exp() * noise)
    torch.testing.assert_close(funcsac.act(state, obs, deterministic=False, noise=noise),
                               expected, **reordered())
    torch.testing.assert_close(funcsac.act(state, obs), torch.tanh(mean), **reordered())


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_equals_eager_without_recompile(backend):
    cfg = _bro()
    assert_compiled_equals_eager(cfg, lambda step: make_batch(cfg, seed=step), 4, 1e-5, 1e-6,
                                 backend)


def test_vmapped_agents_equal_a_loop():
    cfg = _bro()
    assert_vmap_equals_loop(cfg, lambda seed: make_batch(cfg, seed=seed))


def test_reset_draws_the_optimistic_actor_and_adjustments_afresh():
    cfg = _bro(adjustment_lr=1e-2)
    state = funcsac.init_state(cfg, seed=0)
    for step in range(2):
        state, _ = funcsac.update(state, make_batch(cfg, seed=step))
    fresh = funcsac.reset_params(state)
    assert int(fresh.extra["actor_opt"].count) == 0
    torch.testing.assert_close(bro.adjustment(fresh.extra["adjustments"]["optimism"]),
                               torch.tensor(1.0))
    moved = bro.adjustment(state.extra["adjustments"]["optimism"])
    assert not torch.allclose(moved, torch.tensor(1.0))


@pytest.mark.parametrize("field,value,match", [
    ("num_quantiles", 0, r"SACConfig.num_quantiles must be an integer >= 1, got 0"),
    ("kl_target", 0.0, r"SACConfig.kl_target must be a number > 0, got 0.0"),
    ("std_multiplier", -1.0, r"SACConfig.std_multiplier must be a number > 0"),
    ("init_optimism", 1e4, r"SACConfig.init_optimism must be in \(4.54e-05, 1.81e\+03\)"),
    ("init_kl_weight", 0.0, r"SACConfig.init_kl_weight must be in"),
    ("adjustment_lr", -1e-3, r"SACConfig.adjustment_lr must be a number >= 0"),
    ("pessimism", math.nan, r"SACConfig.pessimism must be a finite number, got nan"),
])
def test_bad_values_name_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        _bro(**{field: value})


def test_an_actor_factory_is_refused():
    with pytest.raises(ValueError, match=r"algorithm 'bro' builds its optimistic actor from "
                                         r"SACConfig.network; it does not take an actor_factory"):
        _bro(actor_factory=lambda o, a, h: funcsac.mlp(o, 2 * a, h))


def test_a_quantile_per_critic_and_one_critic_give_finite_steps():
    """K = 1 and N = 1 (no deviation between critics): every loss and gradient stays finite."""
    cfg = _bro(num_quantiles=1, num_critics=1)
    state = funcsac.init_state(cfg, seed=0)
    for step in range(3):
        state, metrics = funcsac.update(state, make_batch(cfg, seed=step))
    assert all(torch.isfinite(v).all() for v in metrics.values()), metrics


def test_the_preset_is_bros_settings():
    p = funcsac.presets.preset("bro")
    assert p["algorithm"] == "bro" and p["network"] == "bronet"
    assert (p["hidden_sizes"], p["actor_hidden_sizes"], p["utd"]) == ((512, 512), (256,), 10)
    assert (p["batch_size"], p["learning_starts"], p["log_std_min"]) == (128, 2500, -10.0)
    assert p["reset_at"][:3] == (15_000, 50_000, 250_000) and "reset_every" not in p
    cfg = funcsac.TrainConfig(**p).sac_config(17, 6)
    assert cfg.algorithm_options.num_quantiles == 100 and cfg.target_entropy == -3.0


def test_cli_trains_bro_and_logs_its_metrics(tmp_path):
    assert main(["train", "--run-dir", str(tmp_path), "--preset", "bro", "--hidden-sizes", "8",
                 "--actor-hidden-sizes", "8", "--num-quantiles", "3", "--utd", "1",
                 "--total-steps", "60", "--learning-starts", "20", "--batch-size", "8",
                 "--reset-at", "40", "--no-compile", "--no-progress",
                 "--eval-episodes", "1", "--eval-every", "30"]) == 0
    saved = json.loads((tmp_path / "config.json").read_text())
    assert (saved["algorithm"], saved["num_quantiles"], saved["reset_at"]) == ("bro", 3, [40])
    header = (tmp_path / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"optimism", "kl_weight", "kl", "optimistic_loss"} <= set(header)


def test_driver_resumes_a_bro_run_exactly(tmp_path, monkeypatch):
    cfg = funcsac.TrainConfig(**{**funcsac.presets.preset("bro"), **TINY,
                                 "hidden_sizes": (16,), "actor_hidden_sizes": (8,),
                                 "num_quantiles": 5, "utd": 2, "batch_size": 16,
                                 "reset_at": (250,), "learning_starts": 200},
                              total_steps=300, eval_every=100, checkpoint_every=100, seed=3)
    first = funcsac.train(cfg, tmp_path / "a")
    resumed = crash_then_resume(cfg, tmp_path / "b", monkeypatch, 300)
    assert_states_equal(resumed.state, first.state)


@pytest.mark.slow
def test_preset_learns_pendulum(tmp_path):
    """The bro preset with narrower networks (critics 128 x 2 blocks, actor 64) and UTD 2 so that
    it fits a test, compiled as in real use; no reset within the run."""
    cfg = funcsac.TrainConfig.from_dict({
        **funcsac.presets.preset("bro"), "env_id": "Pendulum-v1", "total_steps": 6000,
        "learning_starts": 1000, "eval_every": 1000, "eval_episodes": 5,
        "hidden_sizes": (128, 128), "actor_hidden_sizes": (64,), "num_quantiles": 25, "utd": 2,
        "progress": False, "seed": 1})
    result = funcsac.train(cfg, tmp_path)
    assert max(e.return_mean for e in result.evals) >= -250, [e.return_mean for e in result.evals]


def test_explore_noise_comes_from_the_key():
    cfg = _bro()
    state = funcsac.init_state(cfg, seed=0)
    obs = make_batch(cfg).obs
    key = keys.make_key(4)
    a = funcsac.act(state, obs, deterministic=False, key=key)
    b = funcsac.act(state, obs, deterministic=False,
                    noise=keys.normal(key, (32, cfg.act_dim), cfg.dtype))
    assert torch.equal(a, b)
