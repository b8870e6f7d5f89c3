"""Sweeps on Ray Tune: each trial is one ``funcsac.train`` of ``seeds_per_trial`` vmapped agents
that reports its mean eval return (and a checkpoint) after each evaluation.

Schedulers: FIFO, ASHA (stops weak trials early) and PBT (a trial exploits a better one by
continuing from its checkpoint, and explores by changing dynamic hyperparameters, which are
leaves of the state: the mutated trial continues without recompiling).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

from ...state import HParams
from ..run.callbacks import Report
from ..config import TrainConfig
from ..run.loop import train
from .plot import plot_runs
from .search import Search, parse_search

SCHEDULERS = ("fifo", "asha", "pbt")
METRIC = "eval_return"
SETTINGS_FILE = "funcsac-tune.json"  # what an experiment was started with, for --resume


@dataclasses.dataclass(frozen=True)
class TuneSettings:
    """A sweep: the base configuration of every trial, what is searched and how."""

    base: dict  # TrainConfig.to_dict() of the trials' common settings
    searches: tuple  # of Search
    num_samples: int = 4
    scheduler: str = "fifo"
    seeds_per_trial: int = 1
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    pbt_interval: int = 4  # evaluations between PBT's exploit/explore steps of a trial

    def __post_init__(self):
        object.__setattr__(self, "base", TrainConfig.from_dict(self.base).to_dict())
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"--scheduler must be one of {SCHEDULERS}, got {self.scheduler!r}")
        for name in ("num_samples", "seeds_per_trial", "pbt_interval"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be an integer >= 1, got "
                                 f"{getattr(self, name)!r}")
        if self.cpus_per_trial <= 0 or self.gpus_per_trial < 0:
            raise ValueError("--cpus-per-trial must be > 0 and --gpus-per-trial >= 0")
        if not self.searches:
            raise ValueError("a sweep needs at least one --search NAME=KIND(ARGS)")
        if self.base.get("sweep") or self.base.get("num_seeds") != 1:
            raise ValueError("a Tune trial is one configuration times --seeds-per-trial: search "
                             "the swept setting with --search instead of --sweep, and give "
                             "--seeds-per-trial instead of --num-seeds")
        fixed = [s.name for s in self.searches if not s.dynamic]
        if self.scheduler == "pbt" and fixed:
            raise ValueError(f"PBT can only mutate dynamic hyperparameters (state leaves: "
                             f"{', '.join(HParams._fields)}); {fixed} are fixed for a trial")
        for s in self.searches:  # every value a trial may get makes a valid configuration
            for value in (s.args if s.kind in ("choice", "grid") else s.args[:2]):
                trial_config({**self.base, s.name: value}, {}, self.seeds_per_trial)

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "searches": [dataclasses.asdict(s)
                                                         for s in self.searches]}

    @classmethod
    def from_dict(cls, values: dict) -> "TuneSettings":
        return cls(**{**values, "searches": tuple(
            Search(s["name"], s["kind"], _tuples(s["args"])) for s in values["searches"])})


def _tuples(value):
    """JSON's lists as tuples, at every depth."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def load_settings(path: Path) -> TuneSettings:
    """The settings experiment folder ``path`` was started with."""
    if not (Path(path) / SETTINGS_FILE).is_file():
        raise ValueError(f"{path} holds no funcsac tune experiment ({SETTINGS_FILE} is missing)")
    return TuneSettings.from_dict(json.loads((Path(path) / SETTINGS_FILE).read_text()))


def trial_config(base: dict, params: dict, seeds: int) -> TrainConfig:
    """A trial's configuration: the base with the trial's values, ``seeds`` agents, a checkpoint
    at every evaluation (what each report carries), no progress bar."""
    values = {**base, **params, "num_seeds": seeds, "progress": False}
    values["checkpoint_every"] = values["eval_every"]
    return TrainConfig.from_dict(values)


def report_evals(report: Report) -> None:
    """Callback of a trial: after each evaluation, the agents' mean eval return, the env step,
    the dynamic hyperparameters as the state holds them (agent 0) and the checkpoint, to Tune."""
    from ray import tune
    if not report.evals:
        return
    returns = [e.return_mean for e in report.evals]
    hp = report.state.hparams
    metrics = {METRIC: float(np.mean(returns)), "eval_return_std": float(np.std(returns)),
               "env_step": report.step,
               **{f"state_{k}": float(getattr(hp, k).reshape(-1)[0]) for k in hp._fields}}
    checkpoint = (tune.Checkpoint.from_directory(str(report.run_dir))
                  if report.checkpointed else None)
    tune.report(metrics, checkpoint=checkpoint)


def run_trial(params: dict, base: dict, seeds: int) -> None:
    """Tune's trainable: one ``train`` in ``TRIAL_DIR/run``, continued from Tune's checkpoint
    when there is one (a restored experiment, or a PBT exploit of another trial's)."""
    from ray import tune
    config = trial_config(base, params, seeds)
    run_dir = Path(tune.get_context().get_trial_dir()) / "run"
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        shutil.rmtree(run_dir, ignore_errors=True)  # this trial's previous run: superseded
        checkpoint.to_directory(str(run_dir))
    reports = []
    result = train(config, run_dir, resume=checkpoint is not None,
                   callbacks=[reports.append, report_evals])
    if not reports:  # continued another trial's finished run: its last evaluation is this one's
        report_evals(Report(result.evals[-1].step, [], result.evals[-config.num_seeds:], True,
                            run_dir, result.state))


def _domain(search: Search):
    from ray import tune
    make = {"loguniform": tune.loguniform, "uniform": tune.uniform, "randint": tune.randint,
            "choice": lambda *a: tune.choice(list(a)), "grid": lambda *a: tune.grid_search(list(a))}
    return make[search.kind](*search.args)


def _scheduler(settings: TuneSettings, reports: int):
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler
    if settings.scheduler == "asha":
        return ASHAScheduler(time_attr="training_iteration", max_t=reports, grace_period=1,
                             reduction_factor=2)
    if settings.scheduler == "pbt":
        return _pbt(settings)
    return FIFOScheduler()


def _pbt(settings: TuneSettings):
    """Synchronous PBT (trials are compared at the same evaluation) that leaves a trial alone at
    its last evaluation, after which nothing would be trained."""
    from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler

    class LastEvalKeptPBT(PopulationBasedTraining):
        def on_trial_result(self, tune_controller, trial, result):
            if result.get("env_step", 0) >= settings.base["total_steps"]:
                return TrialScheduler.CONTINUE
            return super().on_trial_result(tune_controller, trial, result)

    return LastEvalKeptPBT(time_attr="training_iteration", synch=True,
                           perturbation_interval=settings.pbt_interval,
                           hyperparam_mutations={s.name: _domain(s) for s in settings.searches})


def _trainable(settings: TuneSettings):
    from ray import tune
    fn = tune.with_parameters(run_trial, base=settings.base, seeds=settings.seeds_per_trial)
    return tune.with_resources(fn, {"cpu": settings.cpus_per_trial,
                                    "gpu": settings.gpus_per_trial})


def _init_ray(address: Optional[str]) -> None:
    """Connect to (or start) Ray. Each trial compiles into its machine's private compile store
    (``funcsac.accel.compile.store.store_dir``, never the shared storage: a stored function runs as
    code), which the trials on one machine share, so each configuration is compiled once per
    machine."""
    import ray
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)


def run_tune(settings: Optional[TuneSettings], storage, name: str = "funcsac-tune",
             address: Optional[str] = None, resume: bool = False):
    """Run the sweep ``settings`` as Tune experiment ``storage/name`` (a folder all machines of a
    cluster can reach, or a local one), or, with ``resume``, continue the interrupted experiment
    there (its settings are read back). Returns Tune's ``ResultGrid``; writes ``best.png``, the
    curves of the best trials, into the experiment folder."""
    try:
        from ray import tune
    except ImportError as e:
        raise ValueError(f"funcsac tune needs Ray Tune ({e}): pip install 'funcsac[tune]'") from e
    storage = Path(storage).resolve()
    path = storage / name
    if resume:
        settings = load_settings(path)
    elif (path / SETTINGS_FILE).exists():
        raise ValueError(f"{path} already holds an experiment; continue it with --resume or "
                         "give another --name")
    base = TrainConfig.from_dict(settings.base)
    reports = -(-base.total_steps // base.eval_every) if base.eval_every else 1  # evaluations
    _init_ray(address)
    from .tune_state import StateSnapshot, restore_snapshot
    if resume:
        restore_snapshot(path)
        tuner = tune.Tuner.restore(str(path), _trainable(settings), resume_unfinished=True,
                                   resume_errored=True)
    else:
        path.mkdir(parents=True, exist_ok=True)
        (path / SETTINGS_FILE).write_text(json.dumps(settings.to_dict(), indent=2))
        tuner = tune.Tuner(
            _trainable(settings),
            param_space={s.name: _domain(s) for s in settings.searches},
            tune_config=tune.TuneConfig(metric=METRIC, mode="max",
                                        num_samples=settings.num_samples,
                                        scheduler=_scheduler(settings, reports),
                                        reuse_actors=True, trial_name_creator=_trial_name,
                                        trial_dirname_creator=_trial_name),
            run_config=tune.RunConfig(name=name, storage_path=str(storage), verbose=0,
                                      callbacks=[StateSnapshot()]))
    results = tuner.fit()
    plot_best(results, path / "best.png")
    return results


def _trial_name(trial) -> str:
    return f"trial_{trial.trial_id}"


def best_trials(results, count: int = 3) -> List:
    """The ``count`` results with the highest last eval return (trials that reported)."""
    done = [r for r in results if r.metrics and METRIC in r.metrics]
    return sorted(done, key=lambda r: r.metrics[METRIC], reverse=True)[:count]


def plot_best(results, out: Path, count: int = 3) -> Optional[Path]:
    """Eval curves of the best trials (from their last checkpoints) into ``out``."""
    runs = [r.checkpoint.path for r in best_trials(results, count) if r.checkpoint]
    return plot_runs(runs, out) if runs else None


def results_table(results, searches: Sequence[Search]) -> str:
    """A markdown table of every trial: its searched values, env steps and last eval return,
    best first."""
    names = [s.name for s in searches]
    rows = sorted((r for r in results if r.metrics), reverse=True,
                  key=lambda r: r.metrics.get(METRIC, -np.inf))
    lines = ["| trial | " + " | ".join(names) + " | env steps | eval return |",
             "|---" * (len(names) + 3) + "|"]
    for r in rows:
        config = _trial_config(r)
        values = [f"{config[n]:.4g}" if isinstance(config.get(n), float)
                  else str(config.get(n, "?")) for n in names]
        lines.append(f"| {Path(r.path).name} | " + " | ".join(values)
                     + f" | {r.metrics.get('env_step', '')}"
                     + f" | {r.metrics.get(METRIC, np.nan):.1f} |")
    return "\n".join(lines)


def _trial_config(result) -> dict:
    """A trial's searched values: from its last result, or, for a trial whose last result was
    restored without them (an experiment killed as the trial started), from the ``params.json``
    Tune wrote in the trial's folder."""
    if result.config:
        return result.config
    params = Path(result.path) / "params.json"
    return json.loads(params.read_text()) if params.exists() else {}


def searches_of(texts: Sequence[str]) -> tuple:
    """The ``--search`` arguments parsed; a setting searched twice is an error."""
    searches = tuple(parse_search(t) for t in texts)
    names = [s.name for s in searches]
    if len(set(names)) != len(names):
        raise ValueError(f"each setting may be searched once, got {names}")
    return searches
