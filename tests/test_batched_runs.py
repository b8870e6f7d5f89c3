"""Training on an environment stepped on tensors (``torch/Pendulum-v1``): the collect stage never
puts an observation through numpy, a resumed run is the uninterrupted one bit for bit, the run
loads and evaluates as Pendulum-v1, and what its collect stage cannot take is refused."""
import dataclasses

import pytest
import torch

import funcsac
from funcsac.driver.run import tensor_collector
from helpers import TINY, assert_states_equal, crash_then_resume, eval_rows

SETTINGS = dict(TINY, env_id="torch/Pendulum-v1", num_envs=4, total_steps=240,
                learning_starts=120, eval_every=120, seed=2)


def test_the_collect_stage_never_puts_an_observation_through_numpy(tmp_path, monkeypatch):
    """Every tensor that would become a numpy array while a step is collected fails the run;
    two vmapped agents of 4 rows each learn and evaluate."""
    inside = []

    def refuse(self, *args, **kwargs):
        if inside:
            raise AssertionError("a tensor went through numpy in the collect stage")
        return real_numpy(self, *args, **kwargs)

    real_numpy, real_collect = torch.Tensor.numpy, tensor_collector.TensorCollector.collect

    def collect(self, state):
        inside.append(True)
        try:
            return real_collect(self, state)
        finally:
            inside.pop()

    monkeypatch.setattr(torch.Tensor, "numpy", refuse)
    monkeypatch.setattr(tensor_collector.TensorCollector, "collect", collect)
    result = funcsac.train(funcsac.TrainConfig(**SETTINGS, num_seeds=2), tmp_path)
    assert [(e.step, e.agent) for e in result.evals] == [(120, 0), (120, 1), (240, 0), (240, 1)]
    assert all(e.episode_length_mean == 200 for e in result.evals)
    # learning from the vector step that reaches env step 120: 31 of them, 4 gradient steps each
    assert result.state.step.tolist() == [124, 124]


@pytest.mark.parametrize("n_step", [1, 3])
def test_a_resumed_run_is_the_uninterrupted_one(tmp_path, monkeypatch, n_step):
    """With 3-step returns, the queue's waiting rows are checkpointed too."""
    cfg = funcsac.TrainConfig(**SETTINGS, checkpoint_every=120, n_step=n_step)
    straight = funcsac.train(cfg, tmp_path / "straight")
    resumed = crash_then_resume(cfg, tmp_path / "crashed", monkeypatch, 240)
    assert eval_rows(tmp_path / "crashed") == eval_rows(tmp_path / "straight")
    assert_states_equal(resumed.state, straight.state)
    # the run loads as its gymnasium twin's agent, and acts there
    agent = funcsac.driver.load(tmp_path / "straight")
    result = funcsac.driver.evaluate_agent(agent, 1, seed=0)[0]
    assert result.episode_length_mean == 200


@pytest.mark.parametrize("setting, value, said", [
    ("async_envs", True, "async_envs must be false"),
    ("pixels", True, "pixels must be false"),
    ("autoreset_mode", "next-step", "autoreset_mode must be same-step")])
def test_what_the_tensor_collect_stage_cannot_take_is_refused(setting, value, said):
    with pytest.raises(ValueError, match=f"TrainConfig.{said} with torch/Pendulum-v1"):
        dataclasses.replace(funcsac.TrainConfig(**SETTINGS), **{setting: value})


def test_gradient_steps_set_the_learning_per_step_of_all_environments(tmp_path):
    """8 rows a vector step and 2 gradient steps each: a quarter of one per env step."""
    cfg = funcsac.TrainConfig(**{**SETTINGS, "num_envs": 8}, gradient_steps=2)
    assert cfg.vector_gradient_steps == 2
    # learning from the vector step that reaches env step 120: 16 of them
    assert funcsac.train(cfg, tmp_path).state.step.item() == 16 * 2
    with pytest.raises(ValueError, match="gradient_steps 2 and utd 3 both say"):
        dataclasses.replace(cfg, utd=3)
    with pytest.raises(ValueError, match="gradient_steps must be an integer >= 1"):
        dataclasses.replace(cfg, gradient_steps=0)


def test_the_tensor_n_step_queue_emits_what_the_numpy_one_does():
    """Random streams of 5 rows with terminations and truncations: each step's 3-step rows, their
    order and their horizons are NStepQueue's, bit for bit (the same copies, no arithmetic)."""
    import numpy as np
    from funcsac.driver.replay.nstep import NStepQueue
    from funcsac.driver.replay.tensor_nstep import TensorNStepQueue

    rows, n, g = 5, 3, np.random.default_rng(0)
    numpy_queue = NStepQueue(rows, n, 2, 1)
    tensor_queue = TensorNStepQueue(rows, n, 2, 1, "cpu", torch.float64)
    emitted = 0
    for _ in range(60):
        step = (g.normal(size=(rows, 2)), g.normal(size=(rows, 1)), g.normal(size=rows),
                g.normal(size=(rows, 2)), g.random(rows) < 0.1, g.random(rows) < 0.1)
        want = numpy_queue.push(np.ones(rows, bool), *step)
        got = tensor_queue.push(*map(torch.as_tensor, step))
        for k, v in want.items():
            assert torch.equal(got[k].to(torch.float64), torch.as_tensor(v, dtype=torch.float64))
        emitted += len(want["env"])
    assert emitted > 200
    saved = tensor_queue.state_dict()
    again = TensorNStepQueue(rows, n, 2, 1, "cpu", torch.float64)
    again.load_state_dict(saved)
    assert all(torch.equal(getattr(again, k), v) for k, v in saved.items())
