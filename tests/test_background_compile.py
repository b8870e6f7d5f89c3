"""A run whose compiled update is not in the store trains eagerly while a child process compiles
it: the child builds exactly the run's step (the same store key), the run switches when the child
is done, compiles in its own process when the child fails, and a run shorter than the compile
ends eagerly, with an eager run's numbers, and stops the child."""
import json
import logging
import sys
import time

import numpy as np
import pytest
import torch

import funcsac
from funcsac.driver.run import compiled_step
from funcsac.driver.run import step_functions as steps
from funcsac.driver.envs.spec import EnvSpec
from funcsac.accel.compile.stored import artifact_path, kernel_threads
from helpers import TINY, eval_rows

# a background compile builds into the store, which serves one torch release
pytestmark = pytest.mark.skipif(funcsac.accel.compile.stored._other_torch() is not None,
                                reason="the compile store is written for torch "
                                f"{funcsac.accel.compile.stored.STORE_TORCH}")
SPEC = EnvSpec(3, 1, np.array([-2.0]), np.array([2.0]))
NAME = "update-agents1"  # the store name of a one-agent run's update
DISCRETE = EnvSpec(4, 2, np.array([0.0]), np.array([1.0]), "int64", discrete=True)


@pytest.mark.parametrize("settings,spec", [
    ({}, SPEC),
    ({"utd": 2, "policy_delay": 2}, SPEC),
    ({"policy_delay": 3}, SPEC),  # two steps: the update, and its critic half
    ({"prioritized": True, "n_step": 3}, SPEC),
    ({"num_seeds": 2, "sweep": "critic_lr=1e-4,3e-4", "num_envs": 2}, SPEC),
    ({"offline_data": "data.npz", "offline_ratio": 0.25, "num_critics": 4,
      "num_target_critics": 2}, SPEC),
    ({"algorithm": "crossq", "critic_batch_renorm": True}, SPEC),
    ({}, DISCRETE),
])
def test_the_child_builds_the_step_of_the_run(settings, spec):
    """The request a run sends describes its own step: the child's step has the run's store
    path, for updates, update_many blocks, prioritized n-step replay, several agents and envs,
    offline data, other algorithms and a discrete policy."""
    config = funcsac.TrainConfig(**{**TINY, **settings})
    sac_config = config.sac_config(spec.obs_dim, spec.act_dim, spec.policy)
    agents = config.num_seeds * max(1, len(config.sweep.split(",")))
    fns = steps.step_functions(config, agents)
    args = (steps.initial_state(config, sac_config),
            steps.example_batches(config, spec, sac_config, agents))
    paths = {name: artifact_path(fn, args, name) for name, fn in fns.items()}
    request = compiled_step.build_request(config, spec, paths)
    child_fns, child_args = compiled_step.requested_steps(request)
    assert {name: artifact_path(fn, child_args, name) for name, fn in child_fns.items()} == paths
    # a request for another configuration is told apart
    other = funcsac.TrainConfig(**{**TINY, **settings, "batch_size": 16})
    request = compiled_step.build_request(other, spec, paths)
    other_fns, other_args = compiled_step.requested_steps(request)
    assert all(artifact_path(fn, other_args, name) != paths[name]
               for name, fn in other_fns.items())


class _Child:
    """Stands in for the child process: ends ``after`` seconds from its start with ``status``."""

    def __init__(self, after: float, status: int):
        self.end, self.status, self.returncode, self.terminated = time.time() + after, status, \
            None, False

    def poll(self):
        if self.returncode is None and time.time() >= self.end:
            self.returncode = self.status
        return self.returncode

    def terminate(self):
        self.terminated, self.returncode = True, -15

    def wait(self):
        return self.returncode


def _step(monkeypatch, tmp_path, after: float, status: int):
    compiled = []

    def compile_here(fn, args, name):
        compiled.append(name)
        return lambda *a: "compiled"

    monkeypatch.setattr(compiled_step, "compile_stored", compile_here)
    monkeypatch.setattr(compiled_step, "_start_child", lambda *a: _Child(after, status))
    config = funcsac.TrainConfig(**{**TINY, "compile": True})
    sac_config = config.sac_config(3, 1)
    fns = steps.step_functions(config, 1)
    args = (steps.initial_state(config, sac_config),
            steps.example_batches(config, SPEC, sac_config, 1))
    step = compiled_step.CompiledStep(fns, args, True, config, SPEC, tmp_path / "compile.log")
    return step, fns[NAME], compiled


def test_eager_until_the_child_is_done_then_compiled(monkeypatch, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="funcsac")
    step, eager, compiled = _step(monkeypatch, tmp_path, after=0.3, status=0)
    assert not step.due() and step.function(NAME) is eager and not compiled
    time.sleep(0.4)
    assert step.due()
    assert step.function(NAME)() == "compiled" and compiled == [NAME]
    assert "compiled in the background" in caplog.text
    assert not step.due() and step.function(NAME)() == "compiled" and len(compiled) == 1


@pytest.mark.parametrize("status,match", [(1, "failed.*exit status 1"),
                                          (compiled_step.MISMATCH, "builds another step")])
def test_a_failed_child_is_followed_by_a_compile_here(monkeypatch, tmp_path, status, match):
    step, _, compiled = _step(monkeypatch, tmp_path, after=0.0, status=status)
    time.sleep(0.01)
    with pytest.warns(UserWarning, match=match + ".*compiling it in this process"):
        assert step.function(NAME)() == "compiled"
    assert compiled == [NAME]


def test_closing_stops_a_child_still_compiling(monkeypatch, tmp_path):
    step, eager, _ = _step(monkeypatch, tmp_path, after=60.0, status=0)
    child = step.child
    step.close()
    assert child.terminated


def test_a_run_shorter_than_the_compile_ends_eagerly_with_eager_numbers(tmp_path, monkeypatch):
    """A real child process: the run is over before it has compiled, so the run is an eager run
    (bitwise, on one thread as the eager run is), and the child is stopped; the run's threads are
    restored."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)  # the run's threads when it starts
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    settings = {**TINY, "env_id": "Pendulum-v1", "total_steps": 120, "learning_starts": 60,
                "eval_every": 60, "seed": 4}
    funcsac.train(funcsac.TrainConfig(**settings), tmp_path / "eager")
    made = []
    real = compiled_step._start_child
    with pytest.MonkeyPatch.context() as m:
        m.setattr(compiled_step, "_start_child", lambda *a: made.append(real(*a)) or made[-1])
        funcsac.train(funcsac.TrainConfig(**{**settings, "compile": True}), tmp_path / "cold")
    (child,) = made
    assert child.returncode is not None  # stopped, not left running
    # each run restores its threads at its end; the cold one gave a core to its child and back
    assert threads == [1, 1, 1, 1]
    assert child.args[0] == sys.executable
    assert eval_rows(tmp_path / "cold") == eval_rows(tmp_path / "eager")


def test_the_store_key_holds_the_threads_the_kernels_are_for():
    """Inductor's CPU kernels run their parallel loops on the thread count they were compiled
    under: a step compiled with 1 thread is another artifact than one with 2, and
    ``cpp.threads`` fixes the count whatever torch's."""
    import torch._inductor.config as inductor
    from funcsac.accel.compile.stored import artifact_key

    config = funcsac.TrainConfig(**TINY)
    sac_config = config.sac_config(SPEC.obs_dim, SPEC.act_dim, SPEC.policy)
    fn = steps.step_functions(config, 1)[NAME]
    args = (steps.initial_state(config, sac_config),
            steps.example_batches(config, SPEC, sac_config, 1))
    threads = torch.get_num_threads()
    try:
        keys = {}
        with inductor.patch({"cpp.threads": 0}):
            for n in (1, 2):
                torch.set_num_threads(n)
                keys[n] = artifact_key(fn, args, NAME)
        with inductor.patch({"cpp.threads": 2}):
            torch.set_num_threads(1)
            fixed = artifact_key(fn, args, NAME)
    finally:
        torch.set_num_threads(threads)
    assert keys[1] != keys[2] and fixed == keys[2]


def test_the_child_compiles_for_the_runs_threads_not_its_own(monkeypatch, tmp_path):
    """The child works with one thread (``OMP_NUM_THREADS=1``) but builds the kernels, and their
    key, for the thread count of the run that sent the request."""
    import torch._inductor.config as inductor

    seen = []
    monkeypatch.setattr(compiled_step, "watch_parent", lambda: None)
    monkeypatch.setattr(torch, "set_flush_denormal", lambda on: True)  # the child's alone
    monkeypatch.setattr(compiled_step, "build", lambda r: seen.append(kernel_threads()) or 0)
    with inductor.patch({"cpp.threads": 0}):  # and back to it after main sets it
        request = compiled_step.build_request(funcsac.TrainConfig(**TINY), SPEC, {})
        assert request["threads"] == torch.get_num_threads()
        request["threads"] = 5
        (tmp_path / "request.json").write_text(json.dumps(request))
        assert compiled_step.main(str(tmp_path / "request.json")) == 0 and seen == [5]
    assert kernel_threads() == torch.get_num_threads()
