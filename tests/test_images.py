"""Image observations: DrQ's random shift, the shared encoder trained by the critics, and the
update, the actions and the checks on uint8 image batches."""
import dataclasses

import pytest
import torch

import funcsac
from funcsac import keys
from funcsac.driver.run.agents import stack, vmap_agents
from funcsac.encoders import drq_encoder, prepare_images, random_shift
from funcsac.steps import image_actor_step
from helpers import BACKENDS, assert_compiled_equals_eager, make_batch, reordered, small_config
from reference import ReferenceDrQ, assert_params_match, shifted, step_both

IMAGE = (3, 20, 20)  # the default encoder leaves 32 x 3 x 3 features of it


def image_config(**overrides):
    return small_config(obs_dim=8, image_shape=IMAGE, **overrides)


@pytest.mark.parametrize("pad", [0, 1, 4])
def test_random_shift_is_a_replicate_padded_crop_at_the_drawn_offset(pad):
    images = torch.randn(6, 2, 7, 9)
    key = keys.make_key(3)
    out = random_shift(images, key, pad)
    expected = images if pad == 0 else shifted(images, key, pad)
    # pure data movement: the same values, whatever the implementation
    assert torch.equal(out, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_shift_is_the_same_compiled_and_vmapped(backend):
    """Gathers only (no arithmetic on the pixels), so compiled, vmapped and looped agree
    exactly."""
    images = torch.randn(3, 5, 2, 12, 12)
    key = keys.split(keys.make_key(0), 3)
    looped = torch.stack([random_shift(images[i], key[i], 4) for i in range(3)])
    vmapped = torch.func.vmap(lambda x, k: random_shift(x, k, 4))(images, key)
    compiled = torch.compile(lambda x, k: random_shift(x, k, 4), fullgraph=True,
                             backend=backend)(images[0], key[0])
    assert torch.equal(vmapped, looped)
    assert torch.equal(compiled, looped[0])


def test_drq_encoder_shapes():
    encoder = drq_encoder((9, 84, 84), 50)
    x = prepare_images(torch.randint(0, 256, (2, 9, 84, 84), dtype=torch.uint8), torch.float32)
    assert -0.5 <= x.min() and x.max() <= 0.5
    assert encoder(x).shape == (2, 50)
    assert encoder[-3].in_features == 32 * 35 * 35  # DrQ's 84x84 feature map


@pytest.mark.parametrize("state_dim,views", [(0, 1), (3, 1), (0, 2), (3, 3)])
def test_update_matches_the_drq_reference(state_dim, views):
    """Critic loss through the shared encoder, the target encoder's polyak average, the actor
    on detached features, every shift drawn from the state's key: step by step as
    reference.ReferenceDrQ computes them with modules, autograd and torch.optim.Adam; with a
    state vector beside the images (dict observations), the features followed by the state;
    the target encoder at its own rate (tau x encoder_tau_scale), the targets every other step;
    with several views (DrQ's K = M), the target averaged over the shifted copies and the loss
    taken on each."""
    cfg = image_config(dtype=torch.float64, gamma=0.9, tau=0.05, actor_lr=1e-3, image_pad=2,
                       state_dim=state_dim, encoder_tau_scale=3.0, target_update_every=2,
                       views=views)
    state = funcsac.init_state(cfg, seed=1)
    ref = ReferenceDrQ(state)
    for step in range(4):
        state = step_both(state, ref, make_batch(cfg, batch_size=8, seed=step), step)
    assert_params_match(state, ref)
    for field, module in (("encoder", ref.encoder), ("target_encoder", ref.target_encoder)):
        for k, v in module.state_dict().items():
            torch.testing.assert_close(getattr(state, field)[k], v, **reordered())


def test_the_actor_step_leaves_the_encoder_alone():
    cfg = image_config()
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg, batch_size=8)
    new, _ = image_actor_step(state, funcsac.prepare(state, batch), keys.make_key(1))
    assert not torch.equal(new.actor["0.weight"], state.actor["0.weight"])
    for k, v in state.encoder.items():
        assert torch.equal(new.encoder[k], v), k


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("state_dim", [0, 3])
def test_compiled_image_update_equals_eager(backend, state_dim):
    cfg = image_config(state_dim=state_dim)
    state = assert_compiled_equals_eager(cfg, lambda step: make_batch(cfg, batch_size=8, seed=step),
                                         2, **reordered(torch.float32), backend=backend)
    assert state.encoder


def test_vmapped_agents_train_as_each_alone():
    cfg = image_config(dtype=torch.float64)
    states = [funcsac.init_state(cfg, seed=s) for s in (0, 1)]
    batches = [make_batch(cfg, batch_size=8, seed=s) for s in (0, 1)]
    together, _ = vmap_agents(funcsac.update, 2)(stack(states), stack(batches))
    for i, (s, b) in enumerate(zip(states, batches)):
        alone, _ = funcsac.update(s, b)
        for field in ("encoder", "target_encoder", "critic", "actor"):
            for k, v in getattr(alone, field).items():
                torch.testing.assert_close(getattr(together, field)[k][i], v, **reordered())


def test_actions_from_images_go_through_the_encoder():
    cfg = image_config()
    state = funcsac.init_state(cfg, seed=0)
    images = make_batch(cfg, batch_size=4).obs
    features = funcsac.apply_encoder(state.static.encoder, state.encoder,
                                     prepare_images(images, cfg.dtype))
    mean, _ = funcsac.apply_actor(state.static.actor, state.actor, features, cfg.log_std_min,
                                  cfg.log_std_max)
    torch.testing.assert_close(funcsac.act(state, images), torch.tanh(mean))
    torch.testing.assert_close(funcsac.act(state, images[0]), torch.tanh(mean[0]))
    noise = torch.zeros(4, cfg.act_dim)
    assert funcsac.act(state, images, deterministic=False, noise=noise).shape == (4, 2)


def test_actions_from_images_and_a_state_take_the_features_then_the_state():
    cfg = image_config(state_dim=3)
    state = funcsac.init_state(cfg, seed=0)
    obs = make_batch(cfg, batch_size=4).obs
    features = funcsac.apply_encoder(state.static.encoder, state.encoder,
                                     prepare_images(obs["pixels"], cfg.dtype))
    assert state.static.actor[0].in_features == cfg.obs_dim + 3
    mean, _ = funcsac.apply_actor(state.static.actor, state.actor,
                                  torch.cat([features, obs["state"]], -1), cfg.log_std_min,
                                  cfg.log_std_max)
    torch.testing.assert_close(funcsac.act(state, obs), torch.tanh(mean))
    one = {k: x[1] for k, x in obs.items()}
    torch.testing.assert_close(funcsac.act(state, one), torch.tanh(mean[1]))


def test_dict_batches_and_observations_are_checked():
    cfg = image_config(state_dim=3)
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg, batch_size=4)
    pixels, vector = batch.obs["pixels"], batch.obs["state"]
    with pytest.raises(ValueError, match=r"Batch.obs: expected a dict of \['pixels', 'state'\]"):
        funcsac.update(state, batch._replace(obs=pixels))
    with pytest.raises(ValueError, match=r"Batch.next_obs: expected a dict .* keys \['pixels'\]"):
        funcsac.update(state, batch._replace(next_obs={"pixels": pixels}))
    with pytest.raises(ValueError, match=r"Batch.obs\['state'\]: expected dtype torch.float32"):
        funcsac.update(state, batch._replace(obs={"pixels": pixels, "state": vector.double()}))
    with pytest.raises(ValueError, match=r"Batch.obs\['state'\]: expected shape \[4, 3\]"):
        funcsac.update(state, batch._replace(obs={"pixels": pixels, "state": vector[:, :2]}))
    nan = {"pixels": pixels, "state": vector.clone().fill_(float("nan"))}
    with pytest.raises(ValueError, match=r"Batch.obs\['state'\]: expected finite values"):
        funcsac.check_batch(batch._replace(obs=nan), cfg)
    with pytest.raises(ValueError, match=r"obs: expected a dict of \['pixels', 'state'\]"):
        funcsac.act(state, batch.obs["pixels"])
    with pytest.raises(ValueError, match=r"obs\['state'\]: expected shape \[B, 3\] or \[3\]"):
        funcsac.act(state, {"pixels": batch.obs["pixels"], "state": batch.obs["state"][0]})


def test_image_batches_and_observations_are_checked():
    cfg = image_config()
    state = funcsac.init_state(cfg, seed=0)
    batch = make_batch(cfg, batch_size=4)
    with pytest.raises(ValueError, match=r"Batch.obs: expected dtype torch.uint8"):
        funcsac.update(state, batch._replace(obs=batch.obs.float()))
    with pytest.raises(ValueError, match=r"Batch.next_obs: expected shape \[4, 3, 20, 20\]"):
        funcsac.update(state, batch._replace(next_obs=batch.next_obs[:, :2]))
    with pytest.raises(ValueError, match=r"obs: expected shape \[B, 3, 20, 20\]"):
        funcsac.act(state, batch.obs[:, 0])
    with pytest.raises(ValueError, match="obs: expected dtype torch.uint8"):
        funcsac.act(state, batch.obs.float())
    vector = funcsac.init_state(small_config(obs_dim=8), seed=0)
    with pytest.raises(ValueError, match="encoder and target_encoder must be empty"):
        funcsac.check_state(dataclasses.replace(vector, encoder=state.encoder))


@pytest.mark.parametrize("overrides, field", [
    (dict(image_shape=(3, 20)), "image_shape"),
    (dict(state_dim=3), "state_dim"),
    (dict(image_shape=IMAGE, state_dim=-1), "state_dim"),
    (dict(image_shape=(3, 12, 12)), "image_shape must be at least 15 x 15 pixels for the drq"),
    (dict(image_shape=IMAGE, image_pad=-1), "image_pad"),
    (dict(image_shape=IMAGE, encoder_tau_scale=0.0), "encoder_tau_scale"),
    (dict(image_shape=IMAGE, views=0), "views"),
    (dict(image_shape=IMAGE, tau=0.5, encoder_tau_scale=3.0), "encoder_tau_scale"),
    (dict(image_shape=IMAGE, normalize_obs=True), "normalize_obs"),
    (dict(image_shape=IMAGE, algorithm="crossq"), "algorithm"),
])
def test_invalid_image_configs_are_refused(overrides, field):
    with pytest.raises(ValueError, match=f"SACConfig.{field}"):
        small_config(**overrides)


def test_a_critic_with_a_submodule_named_encoder_is_refused_with_images():
    class Named(torch.nn.Module):
        def __init__(self, obs_dim, act_dim, hidden_sizes):
            super().__init__()
            self.encoder = torch.nn.Linear(obs_dim + act_dim, 1)

        def forward(self, x):
            return self.encoder(x)

    with pytest.raises(ValueError, match="the critic has tensors named 'encoder.'"):
        funcsac.init_state(image_config(critic_factory=Named))
