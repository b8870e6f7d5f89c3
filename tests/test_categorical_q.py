"""Categorical critics (funcsac.variants.categorical_q) against SimbaV2's projection written
with one-hot masks in reference.py, step by step in float64; the projection's properties;
compiled, vmapped, validated."""
import optree
import pytest
import torch

import funcsac
from funcsac.variants.categorical_q.algorithm import project
from helpers import BACKENDS, assert_compiled_equals_eager, make_batch, reordered, small_config
from reference import ReferenceCategorical, check_steps

F64 = torch.float64


def _config(**overrides):
    kw = dict(algorithm="categorical_q", num_bins=11, v_min=-3.0, v_max=3.0)
    return small_config(**{**kw, **overrides})


def test_a_value_on_a_bin_keeps_its_probability_and_one_between_splits_it():
    probs = torch.tensor([[0.25, 0.75, 0.0]], dtype=F64)  # bins -1, 0, 1
    on_bins = project(probs, torch.tensor([[1.0, -1.0, 0.0]], dtype=F64), -1.0, 1.0)
    torch.testing.assert_close(on_bins, torch.tensor([[0.75, 0.0, 0.25]], dtype=F64))
    # 0.5 lies halfway between bins 0 and 1; -7 is clipped to -1
    split = project(probs, torch.tensor([[0.5, -7.0, 0.0]], dtype=F64), -1.0, 1.0)
    torch.testing.assert_close(split, torch.tensor([[0.75, 0.125, 0.125]], dtype=F64))


def test_the_projection_keeps_the_mass_and_the_mean_of_values_inside_the_support():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(64, 21, generator=g, dtype=F64), -1)
    values = 2.8 * (2 * torch.rand(64, 21, generator=g, dtype=F64) - 1)  # inside [-3, 3]
    out = project(probs, values, -3.0, 3.0)
    z = torch.linspace(-3.0, 3.0, 21, dtype=F64)
    torch.testing.assert_close(out.sum(-1), probs.sum(-1))
    torch.testing.assert_close((out * z).sum(-1), (probs * values).sum(-1))
    assert (out >= 0).all()


@pytest.mark.parametrize("num_critics,actor_delay", [(2, 1), (3, 2)])
def test_update_equals_simbav2s_projection_step_by_step(num_critics, actor_delay):
    """Five updates of float64 agents (rewards, horizons and weights varied, so values land
    inside and outside the support) equal the reference's, state and metrics."""
    cfg = _config(dtype=F64, num_critics=num_critics, policy_delay=actor_delay, gamma=0.9)
    check_steps(cfg, ReferenceCategorical)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_equals_eager(backend):
    cfg = _config()
    assert_compiled_equals_eager(cfg, lambda step: make_batch(cfg, batch_size=16, seed=step), 3,
                                 **reordered(torch.float32), backend=backend)


def test_vmapped_agents_train_as_each_alone():
    from helpers import assert_vmap_equals_loop
    cfg = _config(dtype=F64)
    assert_vmap_equals_loop(cfg, lambda seed: make_batch(cfg, batch_size=16, seed=seed))


def test_the_mean_of_the_targets_distributions_is_used_with_mean_reduction():
    cfg = _config(dtype=F64, target_q_reduction="mean")
    state, batch = funcsac.init_state(cfg, seed=0), make_batch(cfg, batch_size=8)
    target = funcsac.losses_for(cfg).target(state, batch, funcsac.keys.make_key(1))
    torch.testing.assert_close(target.sum(-1), torch.ones(8, dtype=F64))


@pytest.mark.parametrize("bad,message", [
    ({"num_bins": 1}, "SACConfig.num_bins must be an integer >= 2, got 1"),
    ({"v_min": 2.0, "v_max": 1.0}, "v_min and v_max must be finite with v_min < v_max"),
])
def test_options_are_checked(bad, message):
    with pytest.raises(ValueError, match=message):
        _config(**bad)


def test_a_critic_of_another_width_is_refused():
    cfg = _config(critic_factory=lambda d, a, h: torch.nn.Sequential(torch.nn.Linear(d + a, 3)))
    state = funcsac.init_state(cfg, seed=0)
    with pytest.raises(ValueError, match=r"must map \[B, obs_dim \+ act_dim\] to "
                                         r"\[B, num_bins=11\] logits, got \[B, 3\]"):
        funcsac.update(state, make_batch(cfg, batch_size=8))


def test_states_are_float64_throughout():
    cfg = _config(dtype=F64)
    state, _ = funcsac.update(funcsac.init_state(cfg, seed=0), make_batch(cfg, batch_size=8))
    assert all(x.dtype != torch.float32 for x in optree.tree_leaves(state, namespace="funcsac"))


def test_the_driver_trains_it_from_the_command_line(tmp_path):
    from funcsac.driver.cli import main
    from helpers import eval_rows
    assert main(["train", "--algorithm", "categorical_q", "--num-bins", "21", "--scale-rewards",
                 "--total-steps", "300", "--learning-starts", "100", "--eval-every", "300",
                 "--hidden-sizes", "16", "16", "--batch-size", "32", "--no-compile",
                 "--no-progress", "--eval-episodes", "1", "--run-dir", str(tmp_path / "run")]) == 0
    assert [row[0] for row in eval_rows(tmp_path / "run")] == ["step", "300"]
    assert funcsac.load(tmp_path / "run").state.config.algorithm_options.num_bins == 21
