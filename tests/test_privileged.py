"""Asymmetric actor-critic: observations that end in privileged numbers only the critics see
(SACConfig.privileged_dim), and the batched environment that gives them (TimedPendulum)."""
import numpy as np
import pytest
import torch

import funcsac
from funcsac.driver.cli import main
from funcsac.driver.envs.torch_pendulum import TimedPendulum, TorchPendulum
from funcsac.networks import apply_critics
from funcsac.normalize import observe
from helpers import TINY, make_batch, small_config


@pytest.mark.parametrize("normalize", [False, True])
def test_the_actor_sees_the_first_obs_dim_numbers_and_the_critics_all(normalize):
    cfg = small_config(privileged_dim=2, normalize_obs=normalize)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg, 8)
    if normalize:  # statistics of the whole rows, privileged numbers included
        state = observe(state, batch.obs * 3 + 1, torch.zeros(8), torch.ones(8, dtype=bool))
    other = batch.obs.clone()
    other[:, cfg.obs_dim:] += 5.0  # other privileged numbers
    acted = funcsac.act(state, batch.obs)
    assert torch.equal(acted, funcsac.act(state, other))
    assert torch.equal(acted, funcsac.act(state, batch.obs[:, :cfg.obs_dim]))  # an eval env's
    q = lambda obs: apply_critics(state.static.critic, state.critic, obs, batch.action)  # noqa
    assert not torch.allclose(q(batch.obs), q(other))
    with pytest.raises(ValueError, match=r"expected shape \[B, 5\]"):
        funcsac.act(state, batch.obs[:, :6])


def test_privileged_numbers_end_vector_observations_only():
    with pytest.raises(ValueError, match="privileged_dim"):
        small_config(privileged_dim=-1)
    with pytest.raises(ValueError, match="privileged_dim"):
        small_config(privileged_dim=2, image_shape=(3, 16, 16), obs_dim=8)


def test_the_timed_pendulum_adds_the_time_of_each_row():
    plain, timed = TorchPendulum(4), TimedPendulum(4)
    first = timed.reset(seed=3)
    assert torch.equal(first[:, :3], plain.reset(seed=3)) and (first[:, 3] == 0).all()
    for t in range(1, 201):
        a = torch.rand(4, 1) * 4 - 2
        out, expected = timed.step(a), plain.step(a)
        assert torch.equal(out.final_obs[:, :3], expected.final_obs)
        assert (out.final_obs[:, 3] == t / 200).all()
    assert out.truncated.all() and (out.obs[:, 3] == 0).all()  # the next episode's first


def test_a_run_on_it_evaluates_and_exports_the_actor_alone(tmp_path):
    run = tmp_path / "run"
    result = funcsac.train(funcsac.TrainConfig(**{
        **TINY, "env_id": "torch/Pendulum-v1-timed", "num_envs": 4, "total_steps": 240,
        "learning_starts": 120, "eval_every": 0, "normalize_obs": True}), run)
    assert result.state.config.privileged_dim == 1 and np.isfinite(result.evals[-1].return_mean)
    agent = funcsac.load(run)
    assert agent.spec.obs_shape == (4,) and agent.spec.actor_obs_shape == (3,)
    obs = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    assert agent.act(obs).shape == (5, 1)  # as Pendulum-v1 gives them
    out = tmp_path / "policy.pt2"
    assert main(["export", str(run), "--format", "torch-export", "--out", str(out)]) == 0
    policy = torch.export.load(str(out)).module()
    np.testing.assert_allclose(policy(torch.as_tensor(obs)).numpy(), agent.act(obs), rtol=1e-5,
                               atol=1e-6)
