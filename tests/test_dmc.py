"""DeepMind Control through gymnasium (shimmy): the command line trains from states and from
pixels with the references' action repeats, observations of 0-d entries flatten, 63-bit seeds
fold, a crashed run resumes bitwise, and a missing extra is named."""
import dataclasses
import importlib.util
import json

import numpy as np
import pytest

import funcsac
from funcsac.driver.cli import main
from funcsac.driver.envs.dmc import reference_action_repeat, register_dmc
from funcsac.driver.envs.make import Pixels, make_eval_env
from helpers import TINY, assert_states_equal, crash_then_resume, eval_rows

# found, not imported: dm_control picks its renderer when first imported (register_dmc sets EGL)
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("dm_control", "shimmy")),
    reason="DeepMind Control needs the dmc extra")

CARTPOLE = "dm_control/cartpole-balance-v0"
RUN = funcsac.TrainConfig(env_id=CARTPOLE, total_steps=300, learning_starts=100, eval_every=100,
                          checkpoint_every=100, seed=3, **TINY)


def test_the_references_action_repeats():
    assert reference_action_repeat(CARTPOLE, pixels=False)[0] == 2  # SimbaV2's
    assert [reference_action_repeat(f"dm_control/{d}-v0", pixels=True)[0] for d in (
        "cartpole-swingup", "walker-walk", "finger-spin", "cheetah-run", "reacher-easy")] == [
        8, 2, 2, 4, 4]  # DrQ's
    assert reference_action_repeat("HalfCheetah-v5", pixels=False)[0] == 1
    assert funcsac.TrainConfig(env_id=CARTPOLE).repeat == 2
    assert funcsac.TrainConfig(env_id=CARTPOLE, action_repeat=1).repeat == 1


def test_observations_of_vectors_and_scalars_flatten_in_the_spaces_order():
    env = make_eval_env("dm_control/walker-walk-v0")  # height is 0-d: 1 + 14 + 9 numbers
    obs, _ = env.reset(seed=2**40 + 3)  # a 63-bit seed folds into the task's 32-bit range
    raw = env.unwrapped._env.physics
    assert obs.shape == (24,) and obs.dtype == np.float64
    np.testing.assert_allclose(obs[0], raw.torso_height())
    again, _ = make_eval_env("dm_control/walker-walk-v0").reset(seed=3)
    np.testing.assert_array_equal(obs, again)


def test_the_command_line_trains_from_states(tmp_path, caplog):
    run = tmp_path / "run"
    with caplog.at_level("INFO", logger="funcsac"):
        assert main(["train", "--env-id", CARTPOLE, "--run-dir", str(run), "--total-steps", "150",
                     "--learning-starts", "100", "--eval-every", "0", "--eval-episodes", "1",
                     "--batch-size", "16", "--hidden-sizes", "16", "16", "--no-compile",
                     "--no-progress"]) == 0
    assert "action_repeat 2: SimbaV2's for DeepMind Control from states" in caplog.text
    assert "150 agent steps (300 env steps)" in caplog.text
    saved = json.loads((run / "config.json").read_text())
    assert saved["action_repeat"] == 2
    # an episode is 1,000 env steps, 500 agent steps: a return over all of them, below 1,000
    header, row = eval_rows(run)
    assert 0 < float(row[header.index("return_mean")]) <= 1000
    agent = funcsac.load(run)
    assert agent.spec.obs_dim == 5 and agent.config.repeat == 2


def test_pixels_render_the_tasks_frames_with_drqs_repeat(tmp_path):
    env = make_eval_env(CARTPOLE, pixels=Pixels(32, 2), repeat=8)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (6, 32, 32) and obs.dtype == np.uint8 and obs.std() > 0
    _, reward, *_ = env.step(np.zeros(1))
    assert 1.0 < reward <= 8.0  # eight steps' rewards, each at most 1
    cfg = dataclasses.replace(RUN, pixels=True, image_size=32, frame_stack=2, total_steps=120,
                              learning_starts=100, eval_every=0, checkpoint_every=0,
                              batch_size=8)
    assert cfg.repeat == 8
    result = funcsac.train(cfg, tmp_path)
    assert result.state.step.item() == 120 - 100 + 1


def test_a_crashed_run_resumes_bitwise(tmp_path, monkeypatch):
    """The checkpoint at 200 agent steps falls mid-episode (500 agent steps an episode): the
    physics, the model and the task's random state come back as they were."""
    first = funcsac.train(RUN, tmp_path / "a")
    resumed = crash_then_resume(RUN, tmp_path / "b", monkeypatch, 200)
    assert eval_rows(tmp_path / "b") == eval_rows(tmp_path / "a")
    assert_states_equal(resumed.state, first.state)


def test_a_missing_extra_is_named(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "shimmy" else real(name, *a))
    with pytest.raises(ValueError, match=r"'dm_control/acrobot-swingup-v9': DeepMind Control "
                                         r"needs shimmy \(pip install 'funcsac\[dmc\]'\)"):
        register_dmc("dm_control/acrobot-swingup-v9")
