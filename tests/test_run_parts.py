"""The training run's collaborators, each alone: the collector, the learner and the recorder,
built on a Progress of their own (no Run around them)."""
import csv

import numpy as np
import torch

import funcsac
from funcsac import keys
from funcsac.driver.envs.make import make_eval_env, make_vector_env
from funcsac.driver.envs.spec import env_spec
from funcsac.driver.replay.sampling import sample_batches
from funcsac.driver.run.agents import agent_specs, split_keys
from funcsac.driver.run.collector import Collector
from funcsac.driver.run import learner, loop
from funcsac.driver.run.learner import Learner
from funcsac.driver.run.step_functions import initial_state, replay_buffer
from funcsac.driver.run.logs import Timings
from funcsac.driver.run.progress import Progress
from funcsac.driver.run.recorder import Recorder
from funcsac.driver.run.seeds import AgentSeeds
from funcsac.registry import POLICIES
from helpers import TINY, assert_states_equal, eval_rows


def progress_of(obs, agents: int = 1, total_steps: int = 1000) -> Progress:
    n = len(obs)
    key = torch.stack([keys.make_key(i) for i in range(agents)])
    return Progress(0, 0, key, obs, np.zeros(n, bool), np.zeros(n), np.zeros(n, int),
                    [[] for _ in range(agents)], [], {}, 0.0, beta_horizon=total_steps)


def test_the_collector_stores_each_real_transition_and_each_finished_episodes_return():
    config = funcsac.TrainConfig(num_envs=2, learning_starts=10**6, **TINY)
    envs = make_vector_env("Pendulum-v1", 2)
    spec = env_spec(envs)
    sac_config = config.sac_config(spec.obs_dim, spec.act_dim)
    buffers = [replay_buffer(config, spec, sac_config)]
    obs, _ = envs.reset(seed=[0, 1])
    p = progress_of(obs)
    collector = Collector(config, spec, sac_config, POLICIES[spec.policy], envs, buffers, None,
                          p, Timings(), np.full(2, 0.99))
    state = initial_state(config, sac_config)
    for _ in range(250):  # Pendulum-v1 episodes end (truncated) after 200 steps
        assert collector.collect(state) is state  # no normalisation: the state is untouched
    envs.close()
    data = {k: v[:buffers[0].size] for k, v in buffers[0].data.items()}
    assert p.env_step == 500 and buffers[0].size == 500
    assert data["action"].abs().max() <= 1.0  # random actions, in policy units
    # rows are stored env-major within each vector step: env i's next step follows its row
    for i in range(2):
        mine = {k: v[i::2] for k, v in data.items()}
        assert torch.equal(mine["next_obs"][:199], mine["obs"][1:200])
        assert not mine["terminated"].any()
        # the finished episode's return is the sum of its 200 stored rewards
        assert np.isclose(p.finished_returns[0][i], mine["reward"][:200].sum().item(),
                          rtol=1e-5)
    assert len(p.finished_returns[0]) == 2 and (p.episode_length == 50).all()


def test_the_learner_waits_for_learning_starts_then_steps_on_sampled_batches():
    config = funcsac.TrainConfig(learning_starts=40, utd=2, **TINY)
    envs = make_vector_env("Pendulum-v1", 1)
    spec = env_spec(envs)
    envs.close()
    sac_config = config.sac_config(spec.obs_dim, spec.act_dim)
    buffer = replay_buffer(config, spec, sac_config)
    g = torch.Generator().manual_seed(0)
    buffer.add({"obs": torch.randn(64, 3, generator=g), "action": torch.rand(64, 1) * 2 - 1,
                "reward": torch.randn(64, generator=g), "next_obs": torch.randn(64, 3),
                "terminated": torch.zeros(64)})
    p = progress_of(np.zeros((1, 3)))
    state = initial_state(config, sac_config)
    learner = Learner(config, spec, sac_config, state, [buffer], None, p, Timings(), None)
    p.env_step = 39
    assert learner.learn(state) is state and p.updates == 0 and learner.metrics is None
    p.env_step, key = 40, p.key
    new = learner.learn(state)
    # the same as sampling with the progress key's second half and calling update_many
    carried, used = split_keys(key)
    rows, _ = sample_batches([buffer], None, used, 2, 32, 0, state.hparams.gamma.reshape(1), 1.0)
    expected, _ = funcsac.update_many(state, rows)
    assert_states_equal(new, expected)
    assert torch.equal(p.key, carried) and p.updates == 2 and learner.metrics is not None
    learner.close()


def test_the_recorder_logs_evaluates_and_checkpoints_at_their_intervals(tmp_path):
    config = funcsac.TrainConfig(**{**TINY, "total_steps": 300, "log_every": 100,
                                    "eval_every": 200, "checkpoint_every": 150})
    envs, eval_env = make_vector_env("Pendulum-v1", 1), make_eval_env("Pendulum-v1")
    spec = env_spec(envs)
    envs.close()
    sac_config = config.sac_config(spec.obs_dim, spec.act_dim)
    agents = agent_specs(config.seed, 1, "")
    seeds = [AgentSeeds.of(a.seed, 1) for a in agents]
    p = progress_of(np.zeros((1, 3)), total_steps=300)
    checkpoints, reports = [], []
    recorder = Recorder(config, tmp_path, sac_config, agents, seeds, spec, eval_env, p,
                        Timings(), lambda: checkpoints.append(p.env_step), resumed=False,
                        callbacks=[lambda r: reports.append(r.step) or r.step >= 200])
    state = initial_state(config, sac_config)
    for step in range(50, 301, 50):
        before, p.env_step = p.env_step, step
        recorder.record(state, None, before)
        if recorder.stopped:
            break
    recorder.close()
    eval_env.close()
    with open(tmp_path / "metrics.csv") as f:
        assert [int(r["step"]) for r in csv.DictReader(f)] == [100, 200]
    with open(tmp_path / "eval.csv") as f:
        assert [int(r["step"]) for r in csv.DictReader(f)] == [200]
    # a checkpoint where 150 was crossed, and one more when the callback stopped the run at 200
    assert checkpoints == [150, 200] and reports == [100, 200] and p.env_step == 200


def test_a_run_sets_its_process_wide_settings_and_restores_them(tmp_path, monkeypatch):
    """Denormals are flushed during a run (a callback sees 1e-39 * 1 become 0) and not after
    it; the intra-op threads are what they were; freed memory is kept for reuse from the run's
    start (``reuse_freed_memory``, once)."""
    tiny = torch.tensor(1e-39)
    seen, threads, reuse = [], torch.get_num_threads(), []
    monkeypatch.setattr(loop, "reuse_freed_memory", lambda: reuse.append(len(seen)))
    cfg = funcsac.TrainConfig(total_steps=60, learning_starts=30, eval_every=30, **TINY)
    funcsac.train(cfg, tmp_path, callbacks=[lambda report: seen.append(float(tiny * 1.0))])
    assert seen and all(x == 0.0 for x in seen)
    assert float(tiny * 1.0) > 0.0 and torch.get_num_threads() == threads
    assert reuse == [0]  # before the first report


def test_a_run_with_a_policy_delay_computes_the_actor_only_when_it_is_due(tmp_path,
                                                                            monkeypatch):
    """policy_delay 3 at one gradient step a call: the learner calls the critic half on the 2
    steps of 3 whose actor is not due, and the run equals one that computes the whole update
    every step (and keeps the actor by torch.where), bit for bit."""
    settings = {**TINY, "env_id": "Pendulum-v1", "total_steps": 160, "learning_starts": 60,
                "eval_every": 80, "seed": 4, "policy_delay": 3}
    calls = []
    real = learner.step_functions

    def counted(config, agents, losses=None):
        fns = real(config, agents, losses)
        return {name: (lambda fn, name: lambda *a: calls.append(name) or fn(*a))(fn, name)
                for name, fn in fns.items()}

    monkeypatch.setattr(learner, "step_functions", counted)
    split = funcsac.train(funcsac.TrainConfig(**settings), tmp_path / "split")
    assert calls == ["update-agents1" if i % 3 == 0 else "update-critic-agents1"
                     for i in range(101)]
    monkeypatch.setattr(learner, "step_functions",
                        lambda config, agents, losses=None: dict([next(iter(
                            real(config, agents, losses).items()))]))
    whole = funcsac.train(funcsac.TrainConfig(**settings), tmp_path / "whole")
    assert_states_equal(split.state, whole.state)
    assert eval_rows(tmp_path / "split") == eval_rows(tmp_path / "whole")
