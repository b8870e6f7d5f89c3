"""A run whose agent diverges stops with an error that says so, names the gradient step and its
losses and keeps the last finite checkpoint; the environment is blamed only for what it returns
for finite actions."""
import pytest
import torch

import funcsac
from funcsac.driver.run.checkpoint import load_checkpoint
from funcsac.driver.run.divergence import DivergenceError, finite
from helpers import TINY

# learning rates of 1e4 blow the networks up within a few gradient steps
DIVERGING = funcsac.TrainConfig(**{**TINY, "env_id": "Pendulum-v1", "total_steps": 1_000,
                                   "learning_starts": 100, "critic_lr": 1e4, "actor_lr": 1e4,
                                   "eval_every": 500, "checkpoint_every": 50})


def test_a_diverging_update_is_named_as_divergence_and_the_finite_checkpoint_kept(tmp_path):
    with pytest.raises(DivergenceError) as raised:
        funcsac.train(DIVERGING, tmp_path / "run")
    said = str(raised.value)
    assert said.startswith("the agent diverged: the policy's actions are not finite")
    assert "after gradient step" in said and "critic_loss" in said and "critic_lr 10000" in said
    assert "non-finite observation" not in said  # the environment is not blamed
    assert f"{tmp_path / 'run' / 'checkpoint.pt'} at env step 100" in said
    payload = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert payload["progress"]["env_step"] == 100
    assert all(torch.isfinite(x).all() for x in payload["agent"] if x.is_floating_point())


def test_a_diverging_run_without_a_checkpoint_says_none_was_written(tmp_path):
    config = type(DIVERGING).from_dict({**DIVERGING.to_dict(), "checkpoint_every": 10_000})
    with pytest.raises(DivergenceError, match="no checkpoint was written before it"):
        funcsac.train(config, tmp_path / "run")


def test_finite_looks_at_every_floating_tensor_of_a_state():
    state = funcsac.init_state(funcsac.SACConfig(obs_dim=3, act_dim=1, hidden_sizes=(8,)))
    assert finite(state)
    critic = {**state.critic, "0.bias": state.critic["0.bias"] * float("nan")}
    assert not finite(state.replace(critic=critic))
    assert not finite(state.replace(log_alpha=torch.tensor(float("inf"))))
