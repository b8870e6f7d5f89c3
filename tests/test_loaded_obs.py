"""A loaded agent acts on observations as its run's environment returns them, for each kind of
observation the driver takes: vectors, images (channels last), a Dict of an image and vectors,
and frames rendered and stacked (which the agent's own env() makes)."""
import numpy as np
import pytest
import torch

import funcsac
import toy_envs  # noqa: F401  (registers the camera envs)
from funcsac.driver.envs.make import make_eval_env
from helpers import TINY

SHORT = dict(total_steps=60, learning_starts=30, eval_every=60, buffer_size=200,
             **{**TINY, "batch_size": 8})


def _train(tmp_path, **settings):
    cfg = funcsac.TrainConfig(**{**SHORT, **settings})
    funcsac.train(cfg, tmp_path)
    return funcsac.load(tmp_path), cfg


def _first_obs(env_id, **kwargs):
    env = make_eval_env(env_id, **kwargs)
    try:
        return env.reset(seed=3)[0]
    finally:
        env.close()


def _raw_obs(env_id):
    import gymnasium as gym
    env = gym.make(env_id)
    try:
        return env.reset(seed=3)[0]
    finally:
        env.close()


def test_vector_observations_are_taken_as_they_are(tmp_path):
    agent, cfg = _train(tmp_path)
    obs = _raw_obs(cfg.env_id)
    expected = funcsac.act(agent.state, torch.as_tensor(obs))
    np.testing.assert_allclose(agent.act(obs), 2.0 * expected.numpy(), atol=1e-6)
    np.testing.assert_allclose(agent.act(obs[None])[0], agent.act(obs), atol=1e-6)


@pytest.mark.parametrize("env_id", ["funcsac-test/SmallCamera-v0",
                                    "funcsac-test/SmallCameraState-v0"])
def test_an_image_or_dict_env_s_own_observations_are_converted_as_in_training(tmp_path, env_id):
    agent, cfg = _train(tmp_path, env_id=env_id)
    raw, observed = _raw_obs(env_id), _first_obs(env_id)
    image = raw["image"] if isinstance(raw, dict) else raw
    assert image.shape == (16, 16, 3)  # the env's own: channels last
    expected = funcsac.act(agent.state, funcsac.map_obs(torch.as_tensor, observed))
    np.testing.assert_allclose(agent.act(raw), expected.numpy(), atol=1e-6)
    np.testing.assert_allclose(agent.act(observed), expected.numpy(), atol=1e-6)  # converted
    batch = funcsac.map_obs(lambda x: np.stack([x, x]), raw)
    np.testing.assert_allclose(agent.act(batch), np.stack([expected.numpy()] * 2), atol=1e-6)
    as_torch = agent.act(funcsac.map_obs(torch.as_tensor, raw))
    np.testing.assert_allclose(as_torch.numpy(), expected.numpy(), atol=1e-6)


def test_a_pixels_agent_names_the_env_that_stacks_its_frames(tmp_path):
    agent, cfg = _train(tmp_path, pixels=True, image_size=16, frame_stack=2)
    frames = _first_obs(cfg.env_id, pixels=cfg.pixel_settings)
    assert frames.shape == (6, 16, 16)
    with agent.env() as env:  # the env the run observed, frames rendered and stacked
        np.testing.assert_array_equal(env.reset(seed=3)[0], frames)
    expected = funcsac.act(agent.state, torch.as_tensor(frames))
    np.testing.assert_allclose(agent.act(frames), 2.0 * expected.numpy(), atol=1e-6)
    for wrong in (frames[-3:], frames[-3:].transpose(1, 2, 0), _raw_obs(cfg.env_id)):
        with pytest.raises(ValueError, match=r"last 2 frames rendered from Pendulum-v1, stacked: "
                                             r"uint8 \[6, 16, 16\].*agent.env\(\)"):
            agent.act(wrong)
