"""The training loop: collect, reset (BRO's periodic resets), learn, record (logs, evaluations,
checkpoints), each stage owned by one collaborator of the ``Run``.

A run trains one agent, or several independent ones (seeds, a hyperparameter sweep) side by side
with one vmapped update; per-agent arrays are laid out agent-major (``[agents * num_envs]``).
``Run`` sets the collaborators up on the run's shared state (the agents' ``SACState``, the replay
buffers, ``Progress``) and writes its checkpoint; ``train`` calls the stages in order until the
run is done.
"""
from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np
import torch

from ... import keys
from ...accel import threads
from ...accel.memory import reuse_freed_memory
from ...parallel import parallel_losses
from ...platform.numerics import numerics, numerics_differences
from ...registry import POLICIES, algorithm_of
from ...reset import reset_params
from ...state import SACState
from ..config import TrainConfig
from ..envs.dmc import reference_action_repeat
from ..envs.make import BATCHED_ENVS, make_batched_env, make_eval_env, make_vector_env
from ..envs.spec import env_spec
from ..envs.state import EnvStateError, restore_envs, save_envs
from ..replay.datasets import dataset_buffer
from ..replay.files import delete_unlisted_chunks, load_buffer, save_buffer
from ..replay.memory import check_buffer_memory
from ..replay.nstep import NStepQueue
from ..replay.tensor_nstep import TensorNStepQueue
from ..tools.evaluate import EvalResult
from ..validate import check_image_run
from .agents import agent_specs
from .callbacks import Callback
from .checkpoint import (CHECKPOINT, CheckpointError, load_checkpoint, restore_state,
                         save_checkpoint, state_leaves)
from .collector import Collector
from .tensor_collector import TensorCollector
from .learner import Learner
from .step_functions import initial_state, replay_buffer
from .logs import Timings
from .progress import Progress, crossed
from .ranks import (RunRanks, any_rank, check_same_state, from_rank_zero, gathered, joined,
                    lost_rank_is_an_error, rank_device, rank_dir)
from .recorder import Recorder
from .resume import check_resumable, retune, start_fresh_episodes
from .divergence import DivergenceError, NonFiniteActions, diverged, finite
from .rundir import prepare_run_dir, removed_if_the_start_fails, writing_to
from .status import LOGGER, showing_status
from .seeds import AgentSeeds


@dataclasses.dataclass
class TrainResult:
    """What ``train`` returns: the final agent (stacked along a leading axis when the run has
    several) and every evaluation (``EvalResult.agent`` says whose)."""

    state: SACState
    evals: List[EvalResult]
    stopped_early: bool = False  # a callback asked to stop; the checkpoint can be resumed


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


@contextlib.contextmanager
def _run_settings():
    """Denormal floats flushed to zero on the CPU for the run (10x slower arithmetic
    otherwise), then not, torch's default (torch has no getter for the setting), and the
    intra-op threads as they were; freed memory kept for reuse (``reuse_freed_memory``: each
    update's pages not faulted in afresh), for the rest of the process (malloc has no getter
    either)."""
    threads = torch.get_num_threads()
    reuse_freed_memory()
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)


def opening_line(config: TrainConfig, sac_config, run_dir: Path, agents: int,
                 world: int = 1) -> str:
    """What a run is, in one line: the algorithm and its networks, the environment, the agents,
    the ranks, the device, precision and threads, the length and the run directory."""
    sizes = "x".join(map(str, sac_config.hidden_sizes))
    return (f"{sac_config.algorithm} ({sac_config.network} {sizes}, {sac_config.num_critics} "
            f"critics) on {config.env_id}, {agents} agent{'s' * (agents > 1)} x "
            f"{config.num_envs} env{'s' * (config.num_envs > 1)}"
            f"{f' x {world} ranks (data-parallel)' if world > 1 else ''}; {sac_config.device} "
            f"{sac_config.precision}, {torch.get_num_threads()} thread"
            f"{'s' * (torch.get_num_threads() > 1)}"
            f"{f' ({threads.choice})' if threads.choice else ''}; "
            f"{config.total_steps:,} steps, learning from "
            f"{config.learning_starts:,}; into {run_dir}")


class Run:
    """One training run: its agents' state, replay buffers, environments and loop progress, and
    the collaborators that advance them: ``collector``, ``learner``, ``recorder``."""

    def __init__(self, config: TrainConfig, run_dir: Path, payload: Optional[dict],
                 callbacks: Sequence[Callback] = (), ranks: Optional[RunRanks] = None):
        self.config, self.run_dir, self.ranks = config, run_dir, ranks or RunRanks()
        self.retuned = False  # resumed with new values of dynamic hyperparameters
        self.checkpointed: Optional[str] = None  # where the last checkpoint lies, and its step
        self.agents = agent_specs(config.seed, config.num_seeds, config.sweep)
        self.seeds = [AgentSeeds.of(a.seed, config.num_envs, self.ranks.rank) for a in self.agents]
        self.batched = config.env_id in BATCHED_ENVS  # rows stepped on tensors
        self.envs = (make_batched_env(config.env_id, len(self.agents) * config.num_envs,
                                      config.device, getattr(torch, config.dtype))
                     if self.batched else
                     make_vector_env(config.env_id, len(self.agents) * config.num_envs,
                                     config.async_envs, config.autoreset_mode,
                                     config.pixel_settings, config.repeat))
        try:
            self.eval_env = (make_eval_env(config.env_id, pixels=config.pixel_settings,
                                           repeat=config.repeat)
                             if self.ranks.rank == 0 else None)  # rank 0 evaluates
            self._setup(payload, callbacks)
        except BaseException:
            self.close()
            raise

    def _setup(self, payload: Optional[dict], callbacks: Sequence[Callback]) -> None:
        self.spec = self._env_spec()
        config, A, n = self.config.for_env(self.spec), len(self.agents), self.config.num_envs
        if config.action_repeat != self.config.action_repeat and config.action_repeat > 1:
            LOGGER.info(f"action_repeat {config.action_repeat}: "  # the task's, not a default
                        f"{reference_action_repeat(config.env_id, config.pixels)[1]}")
        self.config = config
        if self.spec.image_shape and not config.pixels:
            check_image_run(config, f"{config.env_id}'s image observations")
        sac_config = config.agent_config(self.spec)
        self.device = torch.device(sac_config.device)
        LOGGER.info(opening_line(config, sac_config, self.run_dir, A, self.ranks.world))
        # offline data (RLPD): one buffer of the dataset's rows that every agent samples from;
        # read again on resume, not checkpointed. Read first, so a bad dataset fails the run
        # before anything is written.
        self.offline = None
        if config.offline_data and self.spec.discrete:
            raise ValueError("--offline-data supports continuous (Box) action spaces only; "
                             f"{config.env_id} has discrete actions")
        if config.offline_data:
            self.offline = dataset_buffer(config.offline_data, self.spec, self.device,
                                          sac_config.dtype, config.n_step,
                                          None if config.offline_any_env else config.env_id)
        self.state = from_rank_zero(self.ranks, initial_state(config, sac_config))
        self.buffers = [replay_buffer(config, self.spec, sac_config) for _ in self.agents]
        check_buffer_memory(self.buffers, config.total_steps)
        self.buffer_manifests = [{} for _ in self.agents]
        self.nstep = (TensorNStepQueue(A * n, config.n_step, self.spec.obs_dim,
                                       self.spec.action_size, self.device, sac_config.dtype)
                      if self.batched and config.n_step > 1 else
                      NStepQueue(A * n, config.n_step, self.spec.obs_dim, self.spec.action_size)
                      if config.n_step > 1 else None)
        if payload is None:
            self.progress = self._start()
        else:
            self._restore(payload)
        self.timings = Timings(self.progress.timings)
        self.start = time.perf_counter() - self.progress.elapsed
        gammas = np.repeat([a.overrides.get("gamma", sac_config.gamma) for a in self.agents], n)
        self.collector = (TensorCollector if self.batched else Collector)(
            config, self.spec, sac_config, POLICIES[self.spec.policy], self.envs, self.buffers,
            self.nstep, self.progress, self.timings, gammas, self.ranks)
        losses = (parallel_losses(algorithm_of(sac_config).losses, self.ranks)
                  if self.ranks.world > 1 else None)
        self.learner = Learner(config, self.spec, sac_config, self.state, self.buffers,
                               self.offline, self.progress, self.timings,
                               self.run_dir / "compile.log", losses)
        self.recorder = Recorder(config, self.run_dir, sac_config, self.agents, self.seeds,
                                 self.spec, self.eval_env, self.progress, self.timings,
                                 self.checkpoint, payload is not None, callbacks)

    def _env_spec(self):
        """The spec of the run's environments (a batched one's: its gymnasium twin's)."""
        if not self.batched:
            return env_spec(self.envs, self.config.pixels)
        probe = make_vector_env(self.config.env_id, 1)
        try:  # and the privileged numbers only the batched env's critics see
            return dataclasses.replace(env_spec(probe), privileged_dim=self.envs.privileged_dim)
        finally:
            probe.close()

    def _start(self) -> Progress:
        A, n = len(self.agents), self.config.num_envs
        key = torch.stack([keys.make_key(s.loop, self.device) for s in self.seeds])
        if self.batched:  # row i of the first agent's seed + i, and so on
            obs = self.envs.reset(seed=self.seeds[0].envs[0])
        else:
            obs, _ = self.envs.reset(seed=[e for s in self.seeds for e in s.envs])
        progress = Progress(0, 0, key, obs, np.zeros(A * n, bool), np.zeros(A * n),
                            np.zeros(A * n, int), [[] for _ in self.agents], [], {}, 0.0,
                            beta_horizon=self.config.total_steps)
        return progress.on_device(self.device) if self.batched else progress

    def _restore(self, payload: dict) -> None:
        changed = numerics_differences(payload.get("numerics", {}), numerics(self.device))
        if "numerics" in payload and changed:
            warnings.warn("resumed where floating-point results can round differently ("
                          f"{', '.join(changed)}): the run continues, but not bitwise as an "
                          "uninterrupted run would", stacklevel=3)
        self.state, retuned = retune(restore_state(self.state, payload["agent"]), self.config,
                                     payload["config"], self.spec)
        self.retuned = bool(retuned)
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
        self.checkpointed = f"{self.run_dir / CHECKPOINT} at env step {self.progress.env_step:,}"
        if self.nstep is not None:
            self.nstep.load_state_dict(self.progress.nstep)
        if self.batched:
            self.progress = self.progress.on_device(self.device)
            try:
                self.envs.load_state_dict(payload["envs"])
            except ValueError as e:
                raise CheckpointError(f"checkpoint's environment state cannot be restored: "
                                      f"{e}") from e
            return
        try:
            fresh = restore_envs(self.envs, payload["envs"], self.progress.prev_done)
        except EnvStateError as e:
            raise CheckpointError(f"checkpoint's environment state cannot be restored: {e}") from e
        if fresh:
            start_fresh_episodes(self.envs, fresh, self.progress, self.agents, self.config)

    # -- the stages ------------------------------------------------------------------------------
    def collect(self) -> None:
        """One vector step of every agent's environments; real transitions go to the buffers."""
        try:
            self.state = self.collector.collect(self.state)
        except NonFiniteActions:
            raise self.diverged("the policy's actions are not finite") from None

    def diverged(self, what: str) -> DivergenceError:
        """The error that stops a run whose agent diverged (``divergence.diverged``)."""
        return diverged(what, self.progress.env_step, self.progress.updates,
                        self.learner.metrics, self.config, self.checkpointed)

    def reset(self, before: int) -> None:
        """Every agent's networks started over (``funcsac.reset_params``) when the last vector
        step crossed a multiple of ``reset_every`` environment steps or one of ``reset_at``."""
        after = self.progress.env_step
        if (crossed(before, after, self.config.reset_every)
                or any(before < at <= after for at in self.config.reset_at)):
            self.state = reset_params(self.state)

    def learn(self) -> None:
        """``vector_gradient_steps`` per agent, once learning has started."""
        self.state = self.learner.learn(self.state)

    def record(self, before: int) -> None:
        """Logs, evaluations, checkpoints and callbacks due after the last vector step."""
        self.recorder.record(self.state, self.learner.metrics, before)

    def checkpoint(self) -> None:
        """Write the new replay rows, then the checkpoint (atomically); then drop replay chunks
        that no longer hold live rows."""
        with self.timings.phase("checkpoint"):
            if not finite(self.state):  # the last finite checkpoint stays
                raise self.diverged("the agent's parameters are not finite")
            check_same_state(self.ranks, self.state, self.progress.env_step)
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
                "envs": self.envs.state_dict() if self.batched else save_envs(self.envs),
                "env_spec": self.spec.to_dict(),
                "numerics": numerics(self.device)})
            self.buffer_manifests = manifests
            delete_unlisted_chunks(self.run_dir, manifests)
            self.checkpointed = (f"{self.run_dir / CHECKPOINT} at env step "
                                 f"{self.progress.env_step:,}")

    def close(self) -> None:
        """Release the compile, the logs and the environments (those made so far, if the setup
        failed)."""
        for name in ("learner", "recorder", "envs", "eval_env"):
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

    Started by ``torchrun`` (or with ``torch.distributed`` set up), each process is a rank of a
    data-parallel run (``ranks``): rank 0 writes into ``run_dir`` and reports, rank ``r`` writes
    into ``run_dir/ranks/r``.
    """
    with joined(config.device) as ranks, showing_status(quiet=ranks.rank > 0), \
            _StopFlag() as stop, _run_settings():
        run_dir = rank_dir(Path(run_dir), ranks)
        config = _rank_config(config, callbacks, ranks)
        with writing_to(run_dir):
            run = _started(config, run_dir, resume, overwrite, callbacks, ranks)
            try:
                with lost_rank_is_an_error(ranks, lambda: run.checkpointed):
                    _loop(run, stop)
                run.recorder.plot()
            finally:
                run.close()
        _summary(run)
    return TrainResult(run.state, run.progress.evals, run.recorder.stopped)


def _rank_config(config: TrainConfig, callbacks: Sequence[Callback],
                 ranks: RunRanks) -> TrainConfig:
    """``config`` as a rank of a data-parallel run takes it (its own CUDA device; the compile
    in its own process); ``ValueError`` for what such a run cannot do."""
    if ranks.world == 1:
        return config
    if callbacks:
        raise ValueError("a data-parallel run takes no callbacks (rank 0 alone would stop); "
                         "read its logs instead")
    if config.num_seeds > 1 or config.sweep:
        raise ValueError("a data-parallel run trains one agent: --num-seeds 1 and no --sweep "
                         f"(got {config.num_seeds} seeds, sweep {config.sweep or 'none'})")
    return dataclasses.replace(config, device=rank_device(config.device),
                               compile_in_background=False)


def _started(config: TrainConfig, run_dir: Path, resume: bool, overwrite: bool,
             callbacks: Sequence[Callback], ranks: RunRanks) -> Run:
    """The run set up in ``run_dir``, fresh or from its checkpoint; rank 0 prepares its folder
    (which holds the other ranks') before they prepare theirs, and resumed ranks must all stand
    at the same env step."""
    payload = load_checkpoint(run_dir / CHECKPOINT) if resume else None
    if payload is not None:
        config = check_resumable(config, payload)
    if ranks.rank > 0:
        any_rank(ranks)  # rank 0's folder first
    with removed_if_the_start_fails(run_dir):
        prepare_run_dir(run_dir, resume, overwrite)
        if ranks.rank == 0:
            any_rank(ranks)
        run = Run(config, run_dir, payload, callbacks, ranks)
    step = run.progress.env_step
    if ranks.world > 1:
        steps = gathered(ranks, torch.tensor([step])).reshape(-1).tolist()
        if len(set(steps)) > 1:
            run.close()
            raise CheckpointError(f"the ranks' checkpoints stand at env steps {steps}: a rank "
                                  "stopped between two checkpoints; resume from a copy of the "
                                  "run whose ranks stopped together")
    if payload is not None:
        LOGGER.info(f"resumed {run_dir} at env step {step:,} of {config.total_steps:,} "
                    f"({run.progress.updates:,} updates done)")
    return run


def _loop(run: Run, stop: _StopFlag) -> None:
    """The stages in order until the run is done, a callback stops it, or an interrupt (on any
    rank) checkpoints it and raises ``KeyboardInterrupt``."""
    start = run.progress.env_step
    while run.progress.env_step < run.config.total_steps and not run.recorder.stopped:
        if any_rank(run.ranks, stop.requested)[0]:
            run.checkpoint()
            raise KeyboardInterrupt(f"interrupted at step {run.progress.env_step}; checkpoint "
                                    "written, continue with --resume")
        before = run.progress.env_step
        run.collect()
        run.reset(before)
        run.learn()
        run.record(before)
    if run.retuned and run.progress.env_step == start:  # no step left: keep the change
        run.checkpoint()


def _summary(run: Run) -> None:
    """The run's last status lines: steps, updates, time, the final evaluation, the phases'
    times."""
    p, config = run.progress, run.config
    final = (f"final eval return {np.mean([e.return_mean for e in p.evals[-len(run.agents):]]):.1f}"
             if p.evals else "no evaluation yet")
    steps = (f"{p.env_step} env steps" if config.repeat == 1 else
             f"{p.env_step} agent steps ({p.env_step * config.repeat} env steps)")
    with showing_status(quiet=run.ranks.rank > 0):
        LOGGER.info(f"{steps} x {len(run.agents)} agent(s), {p.updates} updates each in "
                    f"{time.perf_counter() - run.start:.1f} s; {final}\n"
                    f"{run.timings.summary()}")
        if run.recorder.stopped:
            LOGGER.info("stopped by a callback; continue with --resume")
