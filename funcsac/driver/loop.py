"""The training loop: collect, update, evaluate, log, checkpoint.

A run trains one agent, or several independent ones (seeds, a hyperparameter sweep) side by side
with one vmapped update; per-agent arrays are laid out agent-major (``[agents * num_envs]``).
"""
from __future__ import annotations

import dataclasses
import json
import signal
import threading
import time
from pathlib import Path
from typing import List

import numpy as np
import torch
from tqdm.auto import tqdm

from .. import keys
from ..act import act
from ..batch import Batch
from ..compile import compile_update
from ..state import SACState, init_state
from ..update import METRIC_NAMES, update
from ..update_many import update_many
from .agents import agent_specs, select, stack, vmap_agents, with_overrides
from .buffer import ReplayBuffer
from .checkpoint import (CheckpointError, load_checkpoint, restore_state, save_checkpoint,
                         state_leaves)
from .config import RUN_LENGTH_FIELDS, TrainConfig
from .envs import (autoreset_mode, env_spec, make_eval_env, make_vector_env, restore_envs,
                   save_envs, scale_action, transitions)
from .evaluate import EvalResult, evaluate
from .logs import EVAL_COLUMNS, PHASES, CsvLog, TensorBoard, Timings

METRICS_COLUMNS = (["step", "episode_return", "episodes", "env_steps_per_s", "updates_per_s"]
                   + [f"time_{p}" for p in PHASES] + list(METRIC_NAMES))
CHECKPOINT = "checkpoint.pt"
EVAL_SEED_OFFSET = 1_000_000


@dataclasses.dataclass
class TrainResult:
    """What ``train`` returns: the final agent (stacked along a leading axis when the run has
    several) and every evaluation (``EvalResult.agent`` says whose)."""

    state: SACState
    evals: List[EvalResult]


@dataclasses.dataclass
class Progress:
    """The loop's own state at a vector-step boundary; with the agents, the buffers and the envs
    it is everything a checkpoint needs to continue exactly."""

    env_step: int
    updates: int
    key: torch.Tensor  # [agents, 2]
    obs: np.ndarray  # [agents * num_envs, obs_dim]
    prev_done: np.ndarray
    episode_return: np.ndarray
    episode_length: np.ndarray
    finished_returns: list  # per agent, since the last metrics row
    evals: list
    timings: dict
    elapsed: float


def _crossed(before: int, after: int, every: int) -> bool:
    return every > 0 and after // every > before // every


def _check_resumable(config: TrainConfig, saved: dict) -> None:
    plain = lambda v: json.loads(json.dumps(v))  # noqa: E731  (tuples and lists compare equal)
    diff = {k: (saved.get(k), v) for k, v in config.to_dict().items()
            if k not in RUN_LENGTH_FIELDS and plain(saved.get(k)) != plain(v)}
    if diff:
        lines = ", ".join(f"{k}: checkpoint {a!r} vs now {b!r}" for k, (a, b) in diff.items())
        raise CheckpointError(f"the checkpoint belongs to a different configuration ({lines}); "
                              "only run-length settings may change on resume")


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


def _split_keys(key: torch.Tensor):
    """Each agent's key ``[A, 2]`` split in two: ``(carried [A, 2], used [A, 2])``."""
    both = torch.func.vmap(lambda k: keys.split(k, 2))(key)
    return both[:, 0], both[:, 1]


def train(config: TrainConfig, run_dir, resume: bool = False) -> TrainResult:
    """Train SAC on ``config.env_id``; everything is written to ``run_dir``.

    With ``resume``, continue from ``run_dir/checkpoint.pt`` (which must exist and match the
    config, except for run-length settings such as ``total_steps``).
    """
    torch.set_flush_denormal(True)
    run_dir = Path(run_dir)
    payload = load_checkpoint(run_dir / CHECKPOINT) if resume else None
    if payload is not None:
        _check_resumable(config, payload["config"])
    run_dir.mkdir(parents=True, exist_ok=True)

    agents = agent_specs(config.seed, config.num_seeds, config.sweep)
    A, n = len(agents), config.num_envs
    env_seeds = [a.seed + i for a in agents for i in range(n)]
    envs = make_vector_env(config.env_id, A * n, config.async_envs, config.autoreset_mode)
    eval_env = make_eval_env(config.env_id)
    spec = env_spec(envs)
    mode = autoreset_mode(envs)
    sac_cfg = config.sac_config(spec.obs_dim, spec.act_dim)
    state = stack([with_overrides(init_state(sac_cfg, seed=a.seed), a) for a in agents])
    buffers = [ReplayBuffer(config.buffer_size, spec.obs_dim, spec.act_dim, sac_cfg.device,
                            sac_cfg.dtype) for _ in agents]
    if payload is None:
        obs, _ = envs.reset(seed=env_seeds)
        progress = Progress(0, 0, torch.stack([keys.fold_in(keys.make_key(a.seed), 1)
                                               for a in agents]),
                            obs, np.zeros(A * n, bool), np.zeros(A * n), np.zeros(A * n, int),
                            [[] for _ in agents], [], {}, 0.0)
    else:
        state = restore_state(state, payload["agent"])
        for buffer, saved in zip(buffers, payload["buffer"]):
            buffer.load_state_dict(saved)
        progress = Progress(**{k: v.numpy() if isinstance(v, torch.Tensor) and k != "key" else v
                               for k, v in payload["progress"].items()})
        progress.evals = [EvalResult(**e) for e in progress.evals]
        if payload["envs"] is not None:
            restore_envs(envs, payload["envs"], progress.prev_done)
        else:  # async envs cannot be saved: start fresh episodes
            progress.obs, _ = envs.reset(seed=[s + progress.env_step for s in env_seeds])
            progress.prev_done[:] = False
            progress.episode_return[:] = 0
            progress.episode_length[:] = 0

    resolved = {k: v for k, v in dataclasses.asdict(sac_cfg).items() if not callable(v)}
    resolved["dtype"] = str(resolved["dtype"])
    (run_dir / "config.json").write_text(json.dumps({**config.to_dict(), "agent": resolved},
                                                    indent=2, default=str))
    label_columns = list(agents[0].label()) if A > 1 else []
    metrics_log = CsvLog(run_dir / "metrics.csv", label_columns + METRICS_COLUMNS)
    eval_log = CsvLog(run_dir / "eval.csv", EVAL_COLUMNS[:1] + label_columns + EVAL_COLUMNS[1:])
    if payload is not None:
        metrics_log.truncate_after(progress.env_step)
        eval_log.truncate_after(progress.env_step)
    board = TensorBoard(run_dir)
    timings = Timings(progress.timings)
    k = config.utd * n  # gradient steps per vector step
    step_fn = vmap_agents(update if k == 1 else update_many, A)
    step_fn = compile_update(step_fn) if config.compile else step_fn
    sample_fn = vmap_agents(lambda s, o, key: act(s, o, deterministic=False, key=key), A)
    metrics = None
    last_log = (time.perf_counter(), progress.env_step, progress.updates)
    start = time.perf_counter() - progress.elapsed

    def snapshot() -> dict:
        progress.timings = dict(timings.totals)
        progress.elapsed = time.perf_counter() - start
        fields = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                  for k, v in dataclasses.asdict(progress).items()}
        fields["evals"] = [dataclasses.asdict(e) for e in progress.evals]
        return {"config": config.to_dict(), "agent": state_leaves(state),
                "buffer": [b.state_dict() for b in buffers], "progress": fields,
                "envs": save_envs(envs)}

    def checkpoint():
        with timings.phase("checkpoint"):
            save_checkpoint(run_dir / CHECKPOINT, snapshot())

    def run_eval():
        for i, agent in enumerate(agents):
            with timings.phase("eval"):
                result = evaluate(select(state, i, A), eval_env, spec, config.eval_episodes,
                                  agent.seed + EVAL_SEED_OFFSET, progress.env_step, agent=i)
            progress.evals.append(result)
            row = {**(agent.label() if A > 1 else {}), **dataclasses.asdict(result)}
            eval_log.write(row)
            board.write(f"eval/agent{i}" if A > 1 else "eval", row, progress.env_step)
        bar.set_postfix(eval_return=f"{np.mean([e.return_mean for e in progress.evals[-A:]]):.1f}")

    def log_metrics():
        nonlocal last_log
        now = time.perf_counter()
        dt = max(now - last_log[0], 1e-9)
        shared = {"step": progress.env_step,
                  "env_steps_per_s": (progress.env_step - last_log[1]) * A / dt,
                  "updates_per_s": (progress.updates - last_log[2]) * A / dt,
                  **{f"time_{p}": timings.totals[p] for p in PHASES}}
        for i, agent in enumerate(agents):
            returns = progress.finished_returns[i]
            row = {**(agent.label() if A > 1 else {}), **shared,
                   "episode_return": np.mean(returns) if returns else "", "episodes": len(returns)}
            if metrics is not None:  # the last gradient step's; the only host sync
                row.update({name: select(v, i, A).reshape(-1)[-1].item()
                            for name, v in metrics.items()})
            metrics_log.write(row)
            board.write(f"train/agent{i}" if A > 1 else "train", row, progress.env_step)
        progress.finished_returns = [[] for _ in agents]
        last_log = (now, progress.env_step, progress.updates)

    bar = tqdm(total=config.total_steps, initial=progress.env_step, disable=not config.progress,
               unit="step", dynamic_ncols=True)
    with _StopFlag() as stop:
        while progress.env_step < config.total_steps:
            if stop.requested:
                checkpoint()
                bar.close()
                raise KeyboardInterrupt(f"interrupted at step {progress.env_step}; checkpoint "
                                        f"written, continue with --resume")
            before = progress.env_step
            with timings.phase("collect"):
                progress.key, k_act = _split_keys(progress.key)
                if progress.env_step < config.learning_starts:
                    uniform = lambda key: keys.uniform(key, (n, spec.act_dim), torch.float64)  # noqa: E731
                    action = torch.func.vmap(uniform)(k_act) * 2 - 1
                else:
                    with torch.no_grad():
                        obs_t = torch.as_tensor(progress.obs, dtype=sac_cfg.dtype,
                                                device=sac_cfg.device).reshape(A, n, -1)
                        action = sample_fn(state, obs_t[0] if A == 1 else obs_t,
                                           k_act[0] if A == 1 else k_act)
                action = action.reshape(A * n, spec.act_dim).cpu().numpy()
                next_obs, reward, terminated, truncated, infos = envs.step(
                    scale_action(action, spec).astype(envs.single_action_space.dtype))
                valid, true_next = transitions(mode, next_obs, terminated, truncated, infos,
                                               progress.prev_done)
                for i, buffer in enumerate(buffers):
                    rows = slice(i * n, (i + 1) * n)
                    buffer.add(Batch(*(torch.as_tensor(np.asarray(x)[rows][valid[rows]]) for x in (
                        progress.obs, action, reward, true_next, terminated))))
                progress.episode_return += np.where(valid, reward, 0.0)
                progress.episode_length += valid
                done = (terminated | truncated) & valid
                for i in np.flatnonzero(done):
                    progress.finished_returns[i // n].append(float(progress.episode_return[i]))
                progress.episode_return[done] = 0.0
                progress.episode_length[done] = 0
                progress.prev_done = terminated | truncated
                progress.obs = next_obs
                progress.env_step += n
                bar.update(n)
            if progress.env_step >= config.learning_starts and buffers[0].size >= config.batch_size:
                with timings.phase("update"):
                    progress.key, k_sample = _split_keys(progress.key)
                    rows = [b.sample(key, config.batch_size * k)
                            for b, key in zip(buffers, k_sample)]
                    if k > 1:
                        rows = [Batch(*(x.reshape(k, config.batch_size, *x.shape[1:]) for x in r))
                                for r in rows]
                    state, metrics = step_fn(state, stack(rows))
                    progress.updates += k
            end = progress.env_step >= config.total_steps
            if _crossed(before, progress.env_step, config.log_every) or end:
                log_metrics()
            if _crossed(before, progress.env_step, config.eval_every) or end:
                run_eval()
            if _crossed(before, progress.env_step, config.checkpoint_every) or end:
                checkpoint()
    bar.close()
    board.close()
    envs.close()
    eval_env.close()
    from .plot import plot_runs
    plot_runs([run_dir], run_dir / "curve.png")
    final = np.mean([e.return_mean for e in progress.evals[-A:]])
    print(f"funcsac: {progress.env_step} env steps x {A} agent(s), {progress.updates} updates each "
          f"in {time.perf_counter() - start:.1f} s; final eval return {final:.1f}\n"
          f"{timings.summary()}")
    return TrainResult(state, progress.evals)
