"""Bad input raises a clear ValueError before anything is computed."""
import pytest
import torch

import funcsac
from helpers import make_batch, small_config


@pytest.mark.parametrize("field,value,match", [
    ("num_critics", 0, "num_critics"),
    ("num_target_critics", 3, r"num_target_critics must be an integer in \[1, num_critics=2\]"),
    ("gamma", 1.5, "gamma"),
    ("tau", -0.1, "tau"),
    ("hidden_sizes", (), "hidden_sizes"),
    ("hidden_sizes", (64, 0), "hidden_sizes"),
    ("actor_lr", float("nan"), "actor_lr"),
    ("init_alpha", 0.0, "init_alpha"),
    ("policy_delay", 1.5, "policy_delay"),
    ("max_grad_norm", -1.0, "max_grad_norm"),
    ("weight_decay_on", "biases", "weight_decay_on must be 'weights'"),
    ("log_std_min", 3.0, "log_std_min"),
    ("actor_q_reduction", "max", "actor_q_reduction"),
    ("dtype", torch.int32, "dtype"),
    ("device", "nonsense", "device"),
    ("critic_factory", "mlp", "critic_factory"),
])
def test_invalid_config_names_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        small_config(**{field: value})


def _bad(batch, **changes):
    return batch._replace(**changes)


@pytest.mark.parametrize("change,match", [
    (lambda b: _bad(b, obs=b.obs[:, :4]), r"Batch.obs: expected shape \[32, 5\], got \[32, 4\]"),
    (lambda b: _bad(b, action=b.action[:16]), r"Batch.action: expected shape \[32, 2\]"),
    (lambda b: _bad(b, reward=b.reward[:, None]),
     r"Batch.reward: expected shape \[32\], got \[32, 1\]"),
    (lambda b: _bad(b, next_obs=b.next_obs.double()),
     r"Batch.next_obs: expected dtype torch.float32"),
    (lambda b: _bad(b, terminated=b.terminated.long()), r"Batch.terminated: expected dtype"),
    (lambda b: _bad(b, reward=torch.empty(32, device="meta")),
     r"Batch.reward: expected device cpu"),
    (lambda b: _bad(b, obs=b.obs.numpy()), r"Batch.obs: expected a tensor"),
    (lambda b: tuple(b), r"expected a funcsac.Batch"),
    (lambda b: _bad(b, horizon=b.horizon[:, None]), r"Batch.horizon: expected shape \[32\]"),
    (lambda b: _bad(b, weight=b.weight.double()), r"Batch.weight: expected dtype torch.float32"),
])
def test_bad_batch(change, match):
    cfg = small_config()
    state = funcsac.init_state(cfg, seed=0)
    with pytest.raises(ValueError, match=match):
        funcsac.update(state, change(make_batch(cfg)))
    with pytest.raises(ValueError, match=match):
        funcsac.check_batch(change(make_batch(cfg)), cfg)


def test_check_batch_reads_values():
    cfg = small_config()
    batch = make_batch(cfg)
    funcsac.check_batch(batch, cfg)
    nan_reward = batch.reward.clone()
    nan_reward[3] = float("nan")
    with pytest.raises(ValueError, match="Batch.reward: expected finite values"):
        funcsac.check_batch(batch._replace(reward=nan_reward), cfg)
    with pytest.raises(ValueError,
                       match=r"Batch.action: expected values in the policy's \[-1, 1\]"):
        funcsac.check_batch(batch._replace(action=batch.action * 3), cfg)
    with pytest.raises(ValueError, match=r"Batch.horizon: expected step counts >= 1"):
        funcsac.check_batch(batch._replace(horizon=batch.horizon * 0), cfg)
    with pytest.raises(ValueError, match=r"Batch.weight: expected weights >= 0"):
        funcsac.check_batch(batch._replace(weight=-batch.weight), cfg)


def test_mismatched_state_and_config():
    state = funcsac.init_state(small_config(), seed=0)
    other = funcsac.init_state(small_config(hidden_sizes=(8, 8)), seed=0)
    with pytest.raises(ValueError, match="SACState.actor does not match its config"):
        funcsac.update(state.replace(actor=other.actor), make_batch(state.config))
    three = funcsac.init_state(small_config(num_critics=3), seed=0)
    with pytest.raises(ValueError, match="SACState.critic does not match"):
        funcsac.update(state.replace(critic=three.critic), make_batch(state.config))
    with pytest.raises(ValueError, match=r"obs: expected shape \[B, 5\]"):
        funcsac.act(state, torch.zeros(3, 4))


def test_state_or_key_on_another_device():
    cfg = small_config()
    state = funcsac.init_state(cfg, seed=0)
    with pytest.raises(ValueError, match="SACState.key is on device meta, its config says cpu"):
        funcsac.update(state.replace(key=torch.empty(2, dtype=torch.int64, device="meta")),
                       make_batch(cfg))
    with pytest.raises(ValueError, match="act: key on device meta, expected the state's device"):
        funcsac.act(state, torch.zeros(5), deterministic=False,
                    key=torch.empty(2, dtype=torch.int64, device="meta"))
