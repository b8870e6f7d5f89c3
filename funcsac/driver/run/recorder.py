"""The record stage: metrics rows, evaluations, checkpoints and callbacks at their intervals, and
the run's logs (CSV files, TensorBoard, W&B), progress bar and curve."""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Callable, List, Sequence

import numpy as np
from tqdm.auto import tqdm

from ...registry import algorithm_of
from ...updates import METRIC_NAMES
from ..tools.evaluate import EvalResult, evaluate
from ..tools.plot import plot_runs
from .agents import select
from .callbacks import Callback, Report, call_all
from .logs import EVAL_COLUMNS, PHASES, Boards, CsvLog, TensorBoard, WandbLog
from .progress import crossed
from .status import LOGGER

METRICS_COLUMNS = (["step", "episode_return", "episodes", "env_steps_per_s", "updates_per_s"]
                   + [f"time_{p}" for p in PHASES] + list(METRIC_NAMES))


def eval_line(evals: List[EvalResult], step: int, total: int, env_steps_per_s: float,
              elapsed: float) -> str:
    """One plain line for an evaluation, as SB3 and CleanRL log: the env step, the return's
    mean and std (over the agents' means where there are several), the speed and the time."""
    means = [e.return_mean for e in evals]
    spread = np.std(means) if len(evals) > 1 else evals[0].return_std
    minutes, seconds = divmod(int(elapsed), 60)
    return (f"step {step:,}/{total:,}: eval return {np.mean(means):.1f} +- {spread:.1f}"
            f"{f' over {len(evals)} agents' if len(evals) > 1 else ''}, "
            f"{env_steps_per_s:,.0f} env steps/s, {minutes}:{seconds:02d} elapsed")


class Recorder:
    """Writes what a run reports into ``run_dir``: ``config.json``, ``metrics.csv``,
    ``eval.csv``, the boards and ``curve.png``; ``checkpoint()`` writes the run's checkpoint.
    ``stopped`` turns true when a callback asks the run to stop. Without an ``eval_env`` (a
    data-parallel run's ranks but the first) it evaluates nothing."""

    def __init__(self, config, run_dir: Path, sac_config, agents: list, seeds: list, spec,
                 eval_env, progress, timings, checkpoint: Callable[[], None], resumed: bool,
                 callbacks: Sequence[Callback] = ()):
        self.config, self.run_dir, self.agents, self.seeds = config, run_dir, agents, seeds
        self.spec, self.eval_env, self.progress, self.timings = spec, eval_env, progress, timings
        self.checkpoint, self.callbacks = checkpoint, list(callbacks)
        self.stopped = False
        self.last_log = (time.perf_counter(), progress.env_step, progress.updates)
        self.last_eval = self.last_log[:2]
        self.learning_starts = config.learning_starts or 0  # None: a config not yet settled
        self.started = time.perf_counter() - progress.elapsed
        self._open_logs(sac_config, resumed)
        # a bar only where it redraws in place: on a terminal (a log file gets the eval lines)
        self.bar = tqdm(total=config.total_steps, initial=progress.env_step, unit="step",
                        disable=not (config.progress and sys.stderr.isatty()),
                        dynamic_ncols=True, desc=self._phase(progress.env_step))

    def _open_logs(self, sac_config, resumed: bool) -> None:
        resolved = {k: v for k, v in dataclasses.asdict(sac_config).items() if not callable(v)}
        resolved["dtype"] = str(resolved["dtype"])
        (self.run_dir / "config.json").write_text(json.dumps(
            {**self.config.to_dict(), "agent": resolved}, indent=2, default=str))
        labels = list(self.agents[0].label()) if len(self.agents) > 1 else []
        self.metrics_log = CsvLog(self.run_dir / "metrics.csv", labels + METRICS_COLUMNS
                                  + list(algorithm_of(sac_config).metrics))
        self.eval_log = CsvLog(self.run_dir / "eval.csv",
                               EVAL_COLUMNS[:1] + labels + EVAL_COLUMNS[1:])
        if resumed:
            self.metrics_log.truncate_after(self.progress.env_step)
            self.eval_log.truncate_after(self.progress.env_step)
        boards = [TensorBoard(self.run_dir)] if self.config.tensorboard else []
        if self.config.wandb_project:
            boards.append(WandbLog(self.run_dir, self.config.wandb_project,
                                   self.config.wandb_mode, self.config.to_dict()))
        self.board = Boards(boards)

    def record(self, state, metrics, before: int) -> None:
        """Logs, evaluations and checkpoints whose interval the last vector step (from env step
        ``before``) crossed; then the callbacks, if anything was logged or evaluated. A
        callback's request to stop ends the run with a checkpoint."""
        cfg, step = self.config, self.progress.env_step
        if before < self.learning_starts <= step:  # the bar's rate and estimate start afresh
            self.bar.reset(total=cfg.total_steps)
            self.bar.initial = self.bar.n = self.bar.last_print_n = step
            self.bar.set_description(self._phase(step))
        else:
            self.bar.update(step - before)
        end = step >= cfg.total_steps
        logs = self.log_metrics(metrics) if crossed(before, step, cfg.log_every) or end else []
        evals = (self.evaluate(state) if self.eval_env is not None
                 and (crossed(before, step, cfg.eval_every) or end) else [])
        checkpointed = crossed(before, step, cfg.checkpoint_every) or end
        if checkpointed:
            self.checkpoint()
        if self.callbacks and (logs or evals):
            report = Report(step, logs, evals, checkpointed, self.run_dir, state)
            if call_all(self.callbacks, report) and not end:
                if not checkpointed:
                    self.checkpoint()
                self.stopped = True

    def evaluate(self, state) -> List[EvalResult]:
        """Deterministic-policy episodes for every agent; one row each in eval.csv. Returns the
        results."""
        A, p = len(self.agents), self.progress
        for i, (agent, seeds) in enumerate(zip(self.agents, self.seeds)):
            with self.timings.phase("eval"):
                result = evaluate(select(state, i, A), self.eval_env, self.spec,
                                  self.config.eval_episodes, seeds.eval, p.env_step, agent=i)
            p.evals.append(result)
            row = {**(agent.label() if A > 1 else {}), **dataclasses.asdict(result)}
            self.eval_log.write(row)
            self.board.write(f"eval/agent{i}" if A > 1 else "eval", row, p.env_step)
        mean = np.mean([e.return_mean for e in p.evals[-A:]])
        self.bar.set_postfix(eval_return=f"{mean:.1f}")
        self.say(eval_line(p.evals[-A:], p.env_step, self.config.total_steps, *self._speeds()))
        return p.evals[-A:]

    def _phase(self, step: int) -> str:
        """The bar's label: what the run does at env step ``step``."""
        return "learning" if step >= self.learning_starts else "random actions"

    def _speeds(self) -> tuple:
        """``(env steps per second since the last evaluation, seconds since the run began)``."""
        now, step = time.perf_counter(), self.progress.env_step
        rate = (step - self.last_eval[1]) * len(self.agents) / max(now - self.last_eval[0], 1e-9)
        self.last_eval = (now, step)
        return rate, now - self.started

    def say(self, line: str) -> None:
        """A status line: above the bar on a terminal, else one line of the run's output."""
        if self.bar.disable:
            LOGGER.info(line)
        else:
            self.bar.write(line)

    def log_metrics(self, metrics) -> List[dict]:
        """One row per agent in metrics.csv: the last update's ``metrics`` (None before the
        first), returns, speeds, times. Returns the rows."""
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
            if metrics is not None:  # the last gradient step's; the only host sync
                row.update({name: select(v, i, A).reshape(-1)[-1].item()
                            for name, v in metrics.items()})
            self.metrics_log.write(row)
            self.board.write(f"train/agent{i}" if A > 1 else "train", row, p.env_step)
            rows.append(row)
        p.finished_returns = [[] for _ in self.agents]
        self.last_log = (now, p.env_step, p.updates)
        return rows

    def plot(self) -> None:
        """The eval curve to RUN_DIR/curve.png and to the boards (none before the first
        evaluation: a run a callback stopped early)."""
        if not self.progress.evals:
            return
        path = plot_runs([self.run_dir], self.run_dir / "curve.png")
        self.board.image("curve", path, self.progress.env_step)

    def close(self) -> None:
        self.bar.close()
        self.board.close()
