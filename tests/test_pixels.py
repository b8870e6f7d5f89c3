"""Training from rendered frames (``--pixels``): the frame-stacking env, a run that resumes bit
for bit, loads and acts on the env's frames, and the settings it refuses."""
import importlib.util

import numpy as np
import pytest
import torch

import funcsac
from funcsac.driver.envs.make import Pixels, make_eval_env
from funcsac.driver.tools.export import export_policy
from helpers import TINY, crash_at_eval, eval_rows
from test_export import _check_without_funcsac

PIXELS = dict(env_id="Pendulum-v1", pixels=True, image_size=16, frame_stack=2,
              buffer_size=2_000, **TINY)


def test_the_env_stacks_its_last_frames_along_the_channels():
    env = make_eval_env("Pendulum-v1", pixels=Pixels(24, 2))
    try:
        first, _ = env.reset(seed=0)
        assert first.shape == (6, 24, 24) and first.dtype == np.uint8
        assert np.array_equal(first[:3], first[3:])  # a reset repeats the first frame
        second, *_ = env.step(np.array([2.0], np.float32))
        assert np.array_equal(second[:3], first[3:])  # the older frame first
        assert not np.array_equal(second[3:], first[3:])
    finally:
        env.close()


def test_a_pixels_run_resumes_bit_for_bit_loads_and_acts(tmp_path, monkeypatch):
    """The checkpoint at 250 falls mid-episode: the frame stack is part of the env's state."""
    cfg = funcsac.TrainConfig(total_steps=300, learning_starts=150, eval_every=250,
                              checkpoint_every=250, seed=3, **PIXELS)
    straight = funcsac.train(cfg, tmp_path / "straight")
    undo = crash_at_eval(monkeypatch, 300)
    with pytest.raises(RuntimeError, match="simulated crash"):
        funcsac.train(cfg, tmp_path / "crashed")
    undo()
    resumed = funcsac.train(cfg, tmp_path / "crashed", resume=True)
    assert eval_rows(tmp_path / "crashed") == eval_rows(tmp_path / "straight")
    leaves = torch.utils._pytree.tree_leaves
    for x, y in zip(leaves(resumed.state), leaves(straight.state), strict=True):
        assert torch.equal(x, y)
    assert straight.state.encoder  # the encoder trained and travels in the state
    # exported, the policy takes the frames as the env gives them and acts as the agent does
    onnx = all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnxscript"))
    for fmt, name in [("torch-export", "policy.pt2")] + [("onnx", "policy.onnx")] * onnx:
        folder = tmp_path / fmt
        folder.mkdir()
        _check_without_funcsac(funcsac.load(tmp_path / "straight"),
                               export_policy(funcsac.load(tmp_path / "straight"), folder / name,
                                             fmt), fmt, folder)

    agent = funcsac.load(tmp_path / "straight")
    env = make_eval_env("Pendulum-v1", pixels=Pixels(16, 2))
    try:
        obs, _ = env.reset(seed=0)
        action = agent.act(obs)
    finally:
        env.close()
    assert action.shape == (1,) and -2.0 <= action[0] <= 2.0
    expected = funcsac.act(straight.state, torch.as_tensor(obs))
    np.testing.assert_allclose(action, 2.0 * expected.numpy(), atol=1e-6)


@pytest.mark.parametrize("overrides, field", [
    (dict(n_step=3), "n_step"),
    (dict(normalize_obs=True), "normalize_obs"),
    (dict(image_size=12), "image_size"),
    (dict(buffer_size=10 ** 9, batch_size=32), "buffer_size"),
])
def test_settings_a_pixels_run_cannot_take_are_refused(overrides, field):
    with pytest.raises(ValueError, match=f"TrainConfig.{field}"):
        funcsac.TrainConfig(**{**PIXELS, **overrides})


def test_the_drq_preset_trains_from_pixels_at_drqs_sizes(tmp_path):
    from funcsac.cli import _train_config, build_parser
    args = build_parser().parse_args(["train", "--run-dir", str(tmp_path), "--preset", "drq"])
    cfg = _train_config(args)
    assert cfg.pixels and (cfg.image_size, cfg.frame_stack, cfg.image_features) == (84, 3, 50)
    sac = cfg.sac_config(0, 6, image_shape=(9, 84, 84))
    assert sac.obs_dim == 50 and sac.hidden_sizes == (1024, 1024) and sac.image_pad == 4
