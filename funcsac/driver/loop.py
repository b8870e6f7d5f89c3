"""The training loop: collect, reset (BRO's periodic resets), learn, evaluate, record (logs,
checkpoints).

A run trains one agent, or several independent ones (seeds, a hyperparameter sweep) side by side
with one vmapped update; per-agent arrays are laid out agent-major (``[agents * num_envs]``).
``Run`` holds everything a run owns; each stage is one of its methods, and ``train`` calls them in
order until the run is done.
"""
from __future__ import annotations

import dataclasses
import json
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .. import keys
from ..act import act
from ..machine import numerics, numerics_differences
from ..normalize import observe
from ..registry import POLICIES
from ..state import HParams, SACState, reset_params
from ..update import METRIC_NAMES
from .agents import agent_specs, parse_sweep, select, vmap_agents
from .callbacks import Callback, Report, call_all
from .checkpoint import (CHECKPOINT, CheckpointError, load_checkpoint, restore_state,
                         save_checkpoint, state_leaves)
from .config import RESUME_MAY_CHANGE, TrainConfig, offline_rows
from .datasets import dataset_buffer
from .envs import (autoreset_mode, check_finite, env_spec, make_eval_env, make_vector_env,
                   scale_action, transitions)
from .envstate import EnvStateError, restore_envs, save_envs, unsaveable_envs
from .evaluate import EvalResult, evaluate
from .nstep import NStepQueue
from .logs import EVAL_COLUMNS, PHASES, Boards, CsvLog, TensorBoard, Timings, WandbLog
from .replay_files import delete_unlisted_chunks, load_buffer, save_buffer
from .plot import plot_runs
from .learner import (CompiledStep, example_batches, initial_state, replay_buffer,
                      step_function)
from .rundir import prepare_run_dir
from .sampling import sample_batches
from .seeds import AgentSeeds, fresh_episode_seed

# exploration noise is drawn for this many vector steps at once (from one key per block), not a
# key split and a draw per step
NOISE_BLOCK = 1024
METRICS_COLUMNS = (["step", "episode_return", "episodes", "env_steps_per_s", "updates_per_s"]
                   + [f"time_{p}" for p in PHASES] + list(METRIC_NAMES))
PAYLOAD_KEYS = {"config", "agent", "buffers", "progress", "envs"}


@dataclasses.dataclass
class TrainResult:
    """What ``train`` returns: the final agent (stacked along a leading axis when the run has
    several) and every evaluation (``EvalResult.agent`` says whose)."""

    state: SACState
    evals: List[EvalResult]
    stopped_early: bool = False  # a callback asked to stop; the checkpoint can be resumed


@dataclasses.dataclass
class Progress:
    """The loop's own state at a vector-step boundary; with the agents, the buffers and the envs
    it is everything a checkpoint needs to continue exactly."""

    env_step: int
    updates: int
    key: torch.Tensor  # [agents, 2], on the training device
    obs: np.ndarray  # [agents * num_envs, obs_dim]
    prev_done: np.ndarray
    episode_return: np.ndarray
    episode_length: np.ndarray
    finished_returns: list  # per agent, since the last metrics row
    evals: list
    timings: dict
    elapsed: float
    beta_horizon: int  # prioritized replay's beta reaches 1 here: the total_steps at the start
    noise_key: Optional[torch.Tensor] = None  # [agents, 2]: the current noise block's key
    nstep: Optional[dict] = None  # the n-step queue's waiting transitions (NStepQueue.state_dict)
    discounted_return: Optional[np.ndarray] = None  # per sub-env, for reward scaling

    def to_checkpoint(self) -> dict:
        fields = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                  for k, v in dataclasses.asdict(self).items()}
        if self.nstep is not None:
            fields["nstep"] = {k: torch.from_numpy(v) for k, v in self.nstep.items()}
        fields["key"] = self.key.cpu()
        fields["noise_key"] = None if self.noise_key is None else self.noise_key.cpu()
        fields["evals"] = [dataclasses.asdict(e) for e in self.evals]
        return fields

    @classmethod
    def from_checkpoint(cls, fields: dict, device) -> "Progress":
        try:
            values = {k: v.numpy() if isinstance(v, torch.Tensor) else v
                      for k, v in fields.items()}
            values["key"] = fields["key"].to(device)
            if fields.get("noise_key") is not None:
                values["noise_key"] = fields["noise_key"].to(device)
            values["evals"] = [EvalResult(**e) for e in values["evals"]]
            if fields.get("nstep") is not None:
                values["nstep"] = {k: v.numpy() for k, v in fields["nstep"].items()}
            return cls(**values)
        except (KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"checkpoint's loop progress is malformed ({e!r})") from e


def _crossed(before: int, after: int, every: int) -> bool:
    return every > 0 and after // every > before // every


def _check_resumable(config: TrainConfig, payload: dict) -> None:
    missing = PAYLOAD_KEYS - set(payload)
    if missing:
        raise CheckpointError(f"checkpoint lacks {sorted(missing)}: not written by this funcsac")
    plain = lambda v: json.loads(json.dumps(v))  # noqa: E731  (tuples and lists compare equal)
    # a setting newer than the checkpoint had its default value there (the feature was off)
    saved = {**TrainConfig.field_defaults(), **payload["config"]}
    diff = {k: (saved.get(k), v) for k, v in config.to_dict().items()
            if k not in RESUME_MAY_CHANGE and plain(saved.get(k)) != plain(v)}
    if diff:
        lines = ", ".join(f"{k}: checkpoint {a!r} vs now {b!r}" for k, (a, b) in diff.items())
        raise CheckpointError(f"the checkpoint belongs to a different configuration ({lines}); "
                              "only run-length and logging settings and dynamic "
                              f"hyperparameters ({', '.join(HParams._fields)}) may change on "
                              "resume")


class _StopFlag:
    """Turns Ctrl-C / SIGTERM into a request to checkpoint at the next step boundary."""

    def __init__(self):
        self.requested = False
        self.saved = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.requested:  # a second Ctrl-C stops at once
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def _per_agent(draw, key: torch.Tensor) -> torch.Tensor:
    """``draw(k)`` for each agent's key of ``key [A, 2]``, stacked ``[A, ...]`` (no vmap for one
    agent: the same numbers, without its per-call cost)."""
    return draw(key[0]).unsqueeze(0) if key.shape[0] == 1 else torch.func.vmap(draw)(key)


def _split_keys(key: torch.Tensor):
    """Each agent's key ``[A, 2]`` split in two: ``(carried [A, 2], used [A, 2])``."""
    both = _per_agent(lambda k: keys.split(k, 2), key)
    return both[:, 0], both[:, 1]


class Run:
    """One training run: its agents, replay buffers, environments, logs and loop progress."""

    def __init__(self, config: TrainConfig, run_dir: Path, payload: Optional[dict],
                 callbacks: Sequence[Callback] = ()):
        self.config, self.run_dir, self.callbacks = config, run_dir, list(callbacks)
        self.stopped = False  # a callback asked to stop
        self.retuned = False  # resumed with new values of dynamic hyperparameters
        self.agents = agent_specs(config.seed, config.num_seeds, config.sweep)
        self.seeds = [AgentSeeds.of(a.seed, config.num_envs) for a in self.agents]
        self.envs = make_vector_env(config.env_id, len(self.agents) * config.num_envs,
                                    config.async_envs, config.autoreset_mode)
        try:
            self.eval_env = make_eval_env(config.env_id)
            self._setup(payload)
        except BaseException:
            self.close()
            raise

    def _setup(self, payload: Optional[dict]) -> None:
        config, A, n = self.config, len(self.agents), self.config.num_envs
        self.spec = env_spec(self.envs)
        self.mode = autoreset_mode(self.envs)
        self.sac_config = config.sac_config(self.spec.obs_dim, self.spec.act_dim, self.spec.policy)
        self.family = POLICIES[self.spec.policy]
        self.device = torch.device(self.sac_config.device)
        # offline data (RLPD): one buffer of the dataset's rows that every agent samples from;
        # read again on resume, not checkpointed. Read first, so a bad dataset fails the run
        # before anything is written.
        self.offline = None
        if config.offline_data and self.spec.discrete:
            raise ValueError("--offline-data supports continuous (Box) action spaces only; "
                             f"{config.env_id} has discrete actions")
        if config.offline_data:
            self.offline = dataset_buffer(config.offline_data, self.spec, self.device,
                                          self.sac_config.dtype, config.n_step,
                                          None if config.offline_any_env else config.env_id)
        self.state = initial_state(config, self.sac_config)
        self.buffers = [replay_buffer(config, self.spec, self.sac_config) for _ in self.agents]
        self.buffer_manifests = [{} for _ in self.agents]
        self.nstep = (NStepQueue(A * n, config.n_step, self.spec.obs_dim, self.spec.action_size)
                      if config.n_step > 1 else None)
        if payload is None:
            self.progress = self._start()
        else:
            self._restore(payload)
        self.timings = Timings(self.progress.timings)
        fn, name = step_function(config, A)
        self.step = (CompiledStep(fn, name, (self.state, example_batches(
            config, self.spec, self.sac_config, A)), config.compile_in_background, config,
            self.spec, self.run_dir / "compile.log") if config.compile else None)
        self.step_fn = fn
        self.sample_fn = vmap_agents(lambda s, o, z: act(s, o, deterministic=False, noise=z), A)
        self.observe_fn = vmap_agents(observe, A)
        self.gammas = np.repeat([a.overrides.get("gamma", self.sac_config.gamma)
                                 for a in self.agents], config.num_envs)
        self.noise = None  # [agents, NOISE_BLOCK, num_envs, act_dim] standard normals, float64
        self.metrics = None
        self.last_log = (time.perf_counter(), self.progress.env_step, self.progress.updates)
        self.start = time.perf_counter() - self.progress.elapsed
        self._open_logs(resumed=payload is not None)
        self.bar = tqdm(total=config.total_steps, initial=self.progress.env_step,
                        disable=not config.progress, unit="step", dynamic_ncols=True)

    # -- setting up ------------------------------------------------------------------------------
    def _start(self) -> Progress:
        A, n = len(self.agents), self.config.num_envs
        obs, _ = self.envs.reset(seed=[e for s in self.seeds for e in s.envs])
        key = torch.stack([keys.make_key(s.loop, self.device) for s in self.seeds])
        return Progress(0, 0, key, obs, np.zeros(A * n, bool), np.zeros(A * n),
                        np.zeros(A * n, int), [[] for _ in self.agents], [], {}, 0.0,
                        beta_horizon=self.config.total_steps)

    def _restore(self, payload: dict) -> None:
        changed = numerics_differences(payload.get("numerics", {}), numerics(self.device))
        if "numerics" in payload and changed:
            warnings.warn("resumed where floating-point results can round differently ("
                          f"{', '.join(changed)}): the run continues, but not bitwise as an "
                          "uninterrupted run would", stacklevel=3)
        self.state = self._retune(restore_state(self.state, payload["agent"]), payload["config"])
        if not isinstance(payload["buffers"], list) or len(payload["buffers"]) != len(self.agents):
            raise CheckpointError(f"checkpoint has replay entries for {len(payload['buffers'])} "
                                  f"agents, this run has {len(self.agents)}")
        for i, (buffer, manifest) in enumerate(zip(self.buffers, payload["buffers"])):
            load_buffer(self.run_dir, i, buffer, manifest)
            buffer.load_priority_state(manifest)
        self.buffer_manifests = [{k: m[k] for k in ("capacity", "added", "chunks")}
                                 for m in payload["buffers"]]
        # a checkpoint from before beta_horizon annealed beta over its own config's total_steps
        self.progress = Progress.from_checkpoint(
            {"beta_horizon": payload["config"]["total_steps"], **payload["progress"]}, self.device)
        if self.nstep is not None:
            self.nstep.load_state_dict(self.progress.nstep)
        try:
            fresh = restore_envs(self.envs, payload["envs"], self.progress.prev_done)
        except EnvStateError as e:
            raise CheckpointError(f"checkpoint's environment state cannot be restored: {e}") from e
        if fresh:
            self._start_fresh_episodes(fresh)

    def _retune(self, state: SACState, saved: dict) -> SACState:
        """``state`` with the dynamic hyperparameters whose configured value differs from the
        checkpoint's config set to the new value (for every agent; a sweep's own values stay)."""
        old = TrainConfig.from_dict(saved).sac_config(self.spec.obs_dim, self.spec.act_dim,
                                                      self.spec.policy)
        swept, _ = parse_sweep(self.config.sweep)
        changed = {k: getattr(self.sac_config, k) for k in HParams._fields
                   if k != swept and getattr(old, k) != getattr(self.sac_config, k)}
        self.retuned = bool(changed)
        if changed:
            print("funcsac: resumed with " + ", ".join(
                f"{k} {getattr(old, k)} -> {v}" for k, v in changed.items()))
        hp = state.hparams
        return state.replace(hparams=hp._replace(
            **{k: torch.full_like(getattr(hp, k), v) for k, v in changed.items()}))

    def _start_fresh_episodes(self, indices: list) -> None:
        """Sub-environments whose state was not saved start fresh episodes (resume not exact)."""
        n, p = self.config.num_envs, self.progress
        reasons = unsaveable_envs(self.envs)
        warnings.warn(f"resume is not exact for {self.config.env_id}: sub-environment(s) "
                      f"{indices} start fresh episodes, because {reasons[indices[0]]}",
                      stacklevel=3)
        seeds = [fresh_episode_seed(self.agents[i // n].seed, i % n, p.env_step)
                 for i in range(len(p.obs))]
        if len(indices) == len(p.obs):
            p.obs, _ = self.envs.reset(seed=seeds)
        else:
            for i in indices:
                p.obs[i], _ = self.envs.envs[i].reset(seed=seeds[i])
                self.envs._autoreset_envs[i] = False
        p.prev_done[indices] = False
        p.episode_return[indices] = 0.0
        p.episode_length[indices] = 0

    def _open_logs(self, resumed: bool) -> None:
        resolved = {k: v for k, v in dataclasses.asdict(self.sac_config).items()
                    if not callable(v)}
        resolved["dtype"] = str(resolved["dtype"])
        (self.run_dir / "config.json").write_text(json.dumps(
            {**self.config.to_dict(), "agent": resolved}, indent=2, default=str))
        labels = list(self.agents[0].label()) if len(self.agents) > 1 else []
        self.metrics_log = CsvLog(self.run_dir / "metrics.csv", labels + METRICS_COLUMNS)
        self.eval_log = CsvLog(self.run_dir / "eval.csv",
                               EVAL_COLUMNS[:1] + labels + EVAL_COLUMNS[1:])
        if resumed:
            self.metrics_log.truncate_after(self.progress.env_step)
            self.eval_log.truncate_after(self.progress.env_step)
        boards = [TensorBoard(self.run_dir)]
        if self.config.wandb_project:
            boards.append(WandbLog(self.run_dir, self.config.wandb_project,
                                   self.config.wandb_mode, self.config.to_dict()))
        self.board = Boards(boards)

    # -- the stages ------------------------------------------------------------------------------
    def collect(self) -> None:
        """One vector step of every agent's environments; real transitions go to the buffers."""
        cfg, p, spec = self.config, self.progress, self.spec
        A, n = len(self.agents), cfg.num_envs
        with self.timings.phase("collect"):
            z = self._exploration_noise()  # [A, n, act_dim]
            if p.env_step < cfg.learning_starts:  # uniformly random actions
                action = self.family.random_action(z)
            else:
                with torch.no_grad():
                    obs_t = torch.as_tensor(p.obs, dtype=self.sac_config.dtype,
                                            device=self.device).reshape(A, n, -1)
                    z = z.to(self.sac_config.dtype)
                    action = self.sample_fn(self.state, obs_t[0] if A == 1 else obs_t,
                                            z[0] if A == 1 else z)
            action = action.reshape(A * n, spec.action_size).cpu().numpy()
            next_obs, reward, terminated, truncated, infos = self.envs.step(
                scale_action(action, spec))
            valid, true_next = transitions(self.mode, next_obs, terminated, truncated, infos,
                                           p.prev_done)
            check_finite(cfg.env_id, p.env_step + n, observation=true_next, reward=reward)
            self._store(valid, p.obs, action, reward, true_next, terminated, truncated)
            if self.state.norm:
                self._observe(valid, reward, terminated | truncated)
            p.episode_return += np.where(valid, reward, 0.0)
            p.episode_length += valid
            done = (terminated | truncated) & valid
            for i in np.flatnonzero(done):
                p.finished_returns[i // n].append(float(p.episode_return[i]))
            p.episode_return[done] = 0.0
            p.episode_length[done] = 0
            p.prev_done = terminated | truncated
            p.obs = next_obs
            p.env_step += n
            self.bar.update(n)

    def _store(self, valid, obs, action, reward, next_obs, terminated, truncated) -> None:
        """Add one vector step's valid transitions to their agents' buffers: as they are, or
        through the n-step queue (which emits the n-step transitions that are complete)."""
        n = self.config.num_envs
        if self.nstep is None:
            rows, env = dict(obs=obs, action=action, reward=reward, next_obs=next_obs,
                             terminated=terminated), np.arange(len(valid))
            rows = {k: np.asarray(v)[valid] for k, v in rows.items()}
            env = env[valid]
        else:
            rows = self.nstep.push(valid, obs, action, reward, next_obs, terminated, truncated)
            env = rows.pop("env")
        for i, buffer in enumerate(self.buffers):
            mine = env // n == i
            buffer.add({k: torch.as_tensor(v[mine]) for k, v in rows.items()})

    def _observe(self, valid, reward, done) -> None:
        """Update the agents' running statistics with this step's observations and running
        discounted returns (``R = gamma * R + r``, restarted after each episode end)."""
        p, A = self.progress, len(self.agents)
        if p.discounted_return is None:
            p.discounted_return = np.zeros(len(valid))
        p.discounted_return = np.where(valid, self.gammas * p.discounted_return + reward,
                                       p.discounted_return)
        as_tensor = lambda x, dtype: torch.as_tensor(  # noqa: E731
            np.asarray(x), dtype=dtype, device=self.device).reshape(A, len(valid) // A, -1)
        obs = as_tensor(p.obs, self.sac_config.dtype)
        returns = as_tensor(p.discounted_return, torch.float64)[..., 0]
        mask = as_tensor(valid, torch.bool)[..., 0]
        self.state = self.observe_fn(self.state, *(x[0] if A == 1 else x
                                                   for x in (obs, returns, mask)))
        p.discounted_return[done] = 0.0

    def _exploration_noise(self) -> torch.Tensor:
        """This vector step's standard normal noise ``[A, num_envs, act_dim]`` (float64), from
        the block drawn with ``progress.noise_key``; a new block (and key) every ``NOISE_BLOCK``
        vector steps."""
        p, n = self.progress, self.config.num_envs
        i = (p.env_step // n) % NOISE_BLOCK
        if i == 0 or p.noise_key is None:
            p.key, p.noise_key = _split_keys(p.key)
            self.noise = None
        if self.noise is None:  # a new block, or the current one after a resume
            shape = (NOISE_BLOCK, n, self.spec.act_dim)
            self.noise = _per_agent(lambda k: keys.normal(k, shape, torch.float64), p.noise_key)
        return self.noise[:, i]

    def reset(self, before: int) -> None:
        """Every agent's networks started over (``funcsac.reset_params``) when the last vector
        step crossed a multiple of ``reset_every`` environment steps."""
        if _crossed(before, self.progress.env_step, self.config.reset_every):
            self.state = reset_params(self.state)

    def learn(self) -> None:
        """``utd * num_envs`` gradient steps per agent, once learning has started."""
        cfg, p = self.config, self.progress
        online = cfg.batch_size - (0 if self.offline is None
                                   else offline_rows(cfg.batch_size, cfg.offline_ratio))
        if p.env_step < cfg.learning_starts or self.buffers[0].size < online:
            return
        k = cfg.utd * cfg.num_envs
        # step_fn is the eager step until the compiled one is ready, then loaded (or compiled)
        if self.step is not None and self.step.due():
            with self.timings.phase("compile"):
                self.step_fn = self.step.function()
        with self.timings.phase("update"):
            p.key, k_sample = _split_keys(p.key)
            rows, positions = self._sample(k_sample, k)
            self.state, self.metrics, *aux = self.step_fn(self.state, rows)
            if aux:  # prioritized replay: the rows' new priorities from their TD errors
                td_error = aux[0]["td_error"].reshape(len(self.buffers), -1)
                for buffer, where, td in zip(self.buffers, positions, td_error):
                    buffer.set_priorities(where, td)
            p.updates += k

    def _sample(self, key: torch.Tensor, k: int):
        """Each agent's ``k`` batches and the positions of their online rows
        (``sample_batches``); prioritized replay's beta anneals to 1 over the steps the run
        began with."""
        cfg, p = self.config, self.progress
        beta = cfg.priority_beta + (1.0 - cfg.priority_beta) * min(1.0, p.env_step / p.beta_horizon)
        return sample_batches(self.buffers, self.offline, key, k, cfg.batch_size,
                              offline_rows(cfg.batch_size, cfg.offline_ratio),
                              self.state.hparams.gamma.reshape(len(self.agents)), beta)

    def evaluate(self) -> List[EvalResult]:
        """Deterministic-policy episodes for every agent; one row each in eval.csv. Returns the
        results."""
        A, p = len(self.agents), self.progress
        for i, (agent, seeds) in enumerate(zip(self.agents, self.seeds)):
            with self.timings.phase("eval"):
                result = evaluate(select(self.state, i, A), self.eval_env, self.spec,
                                  self.config.eval_episodes, seeds.eval, p.env_step, agent=i)
            p.evals.append(result)
            row = {**(agent.label() if A > 1 else {}), **dataclasses.asdict(result)}
            self.eval_log.write(row)
            self.board.write(f"eval/agent{i}" if A > 1 else "eval", row, p.env_step)
        mean = np.mean([e.return_mean for e in p.evals[-A:]])
        self.bar.set_postfix(eval_return=f"{mean:.1f}")
        return p.evals[-A:]

    def log_metrics(self) -> List[dict]:
        """One row per agent in metrics.csv: the last update's metrics, returns, speeds, times.
        Returns the rows."""
        A, p = len(self.agents), self.progress
        now = time.perf_counter()
        dt = max(now - self.last_log[0], 1e-9)
        shared = {"step": p.env_step,
                  "env_steps_per_s": (p.env_step - self.last_log[1]) * A / dt,
                  "updates_per_s": (p.updates - self.last_log[2]) * A / dt,
                  **{f"time_{ph}": self.timings.totals[ph] for ph in PHASES}}
        rows = []
        for i, agent in enumerate(self.agents):
            returns = p.finished_returns[i]
            row = {**(agent.label() if A > 1 else {}), **shared,
                   "episode_return": np.mean(returns) if returns else "", "episodes": len(returns)}
            if self.metrics is not None:  # the last gradient step's; the only host sync
                row.update({name: select(v, i, A).reshape(-1)[-1].item()
                            for name, v in self.metrics.items()})
            self.metrics_log.write(row)
            self.board.write(f"train/agent{i}" if A > 1 else "train", row, p.env_step)
            rows.append(row)
        p.finished_returns = [[] for _ in self.agents]
        self.last_log = (now, p.env_step, p.updates)
        return rows

    def checkpoint(self) -> None:
        """Write the new replay rows, then the checkpoint (atomically); then drop replay chunks
        that no longer hold live rows."""
        with self.timings.phase("checkpoint"):
            manifests = [save_buffer(self.run_dir, i, b, m) for i, (b, m)
                         in enumerate(zip(self.buffers, self.buffer_manifests))]
            self.progress.timings = dict(self.timings.totals)
            if self.nstep is not None:
                self.progress.nstep = self.nstep.state_dict()
            self.progress.elapsed = time.perf_counter() - self.start
            save_checkpoint(self.run_dir / CHECKPOINT, {
                "config": self.config.to_dict(), "agent": state_leaves(self.state),
                "buffers": [{**m, **b.priority_state()} for m, b in zip(manifests, self.buffers)],
                "progress": self.progress.to_checkpoint(),
                "envs": save_envs(self.envs), "env_spec": self.spec.to_dict(),
                "numerics": numerics(self.device)})
            self.buffer_manifests = manifests
            delete_unlisted_chunks(self.run_dir, manifests)

    def record(self, before: int) -> None:
        """Logs, evaluations and checkpoints whose interval the last vector step crossed; then
        the callbacks, if anything was logged or evaluated. A callback's request to stop ends the
        run with a checkpoint."""
        cfg, step = self.config, self.progress.env_step
        end = step >= cfg.total_steps
        logs = self.log_metrics() if _crossed(before, step, cfg.log_every) or end else []
        evals = self.evaluate() if _crossed(before, step, cfg.eval_every) or end else []
        checkpointed = _crossed(before, step, cfg.checkpoint_every) or end
        if checkpointed:
            self.checkpoint()
        if self.callbacks and (logs or evals):
            report = Report(step, logs, evals, checkpointed, self.run_dir, self.state)
            if call_all(self.callbacks, report) and not end:
                if not checkpointed:
                    self.checkpoint()
                self.stopped = True

    def plot(self) -> None:
        """The eval curve to RUN_DIR/curve.png and to the loggers."""
        path = plot_runs([self.run_dir], self.run_dir / "curve.png")
        self.board.image("curve", path, self.progress.env_step)

    def close(self) -> None:
        """Release the progress bar, the loggers and the environments (those made so far, if the
        setup failed)."""
        for name in ("step", "bar", "board", "envs", "eval_env"):
            if getattr(self, name, None) is not None:
                getattr(self, name).close()


def train(config: TrainConfig, run_dir, resume: bool = False, overwrite: bool = False,
          callbacks: Sequence[Callback] = ()) -> TrainResult:
    """Train SAC on ``config.env_id``; everything is written to ``run_dir``.

    With ``resume``, continue from ``run_dir/checkpoint.pt`` (which must exist and match the
    config, except for run-length and logging settings such as ``total_steps``, and the dynamic
    hyperparameters, whose new values replace the checkpointed ones). Without it, ``run_dir`` must
    not hold a run already; ``overwrite`` moves such a run aside (``RUN_DIR.old-TIMESTAMP``).

    Each callback is called with a ``Report`` after every record stage that wrote metrics or
    evaluations; if one returns a true value, the run stops there with a checkpoint
    (``TrainResult.stopped_early``) and can be resumed.
    """
    torch.set_flush_denormal(True)
    run_dir = Path(run_dir)
    with _StopFlag() as stop:
        payload = load_checkpoint(run_dir / CHECKPOINT) if resume else None
        if payload is not None:
            _check_resumable(config, payload)
        prepare_run_dir(run_dir, resume, overwrite)
        run = Run(config, run_dir, payload, callbacks)
        try:
            start = run.progress.env_step
            while run.progress.env_step < config.total_steps and not run.stopped:
                if stop.requested:
                    run.checkpoint()
                    raise KeyboardInterrupt(f"interrupted at step {run.progress.env_step}; "
                                            "checkpoint written, continue with --resume")
                before = run.progress.env_step
                run.collect()
                run.reset(before)
                run.learn()
                run.record(before)
            if run.retuned and run.progress.env_step == start:  # no step left: keep the change
                run.checkpoint()
            run.plot()
        finally:
            run.close()
    p = run.progress
    final = np.mean([e.return_mean for e in p.evals[-len(run.agents):]])
    stopped = "\nfuncsac: stopped by a callback; continue with --resume" if run.stopped else ""
    print(f"funcsac: {p.env_step} env steps x {len(run.agents)} agent(s), {p.updates} updates "
          f"each in {time.perf_counter() - run.start:.1f} s; final eval return {final:.1f}\n"
          f"{run.timings.summary()}{stopped}")
    return TrainResult(run.state, p.evals, run.stopped)
