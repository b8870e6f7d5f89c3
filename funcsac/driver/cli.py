"""Command line: ``funcsac train``, ``tune``, ``evaluate``, ``export``, ``collect``, ``plot`` (see
``funcsac COMMAND --help``)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from .config import TrainConfig, load_config_file, settings
from .factories import FACTORY_FIELDS, absolute_factory_name
from .flags import add_settings, short_help
from .tools.tune import SCHEDULERS
from .presets import NEEDS_OFFLINE_DATA, PRESETS, per_task_choices, preset


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="funcsac", description="Soft Actor-Critic on gymnasium")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train an agent", add_help=False)
    train.add_argument("-h", "--help", action="store_true",
                       help="each setting with the value this run takes, by group, in a screen")
    train.add_argument("--help-all", action="help",
                       help="each setting with what it means and its default; every variant's "
                            "options")
    train.add_argument("--run-dir", required=True, help="folder for logs, checkpoints and plots")
    train.add_argument("--resume", action="store_true",
                       help="continue from RUN_DIR/checkpoint.pt with RUN_DIR/config.json")
    train.add_argument("--overwrite", action="store_true",
                       help="if RUN_DIR holds a run, move it aside to RUN_DIR.old-TIMESTAMP "
                            "(nothing is deleted) and start a new one")
    _add_settings(train)
    tune = sub.add_parser("tune", help="a hyperparameter sweep on Ray Tune (needs "
                          "funcsac[tune]); every train flag sets the base of every trial")
    tune.add_argument("--search", action="append", default=[], metavar="NAME=KIND(ARGS)",
                      help="a searched setting, KIND one of loguniform(lo,hi), uniform(lo,hi), "
                           "randint(lo,hi), choice(v1,v2,...), grid(v1,v2,...); repeatable")
    tune.add_argument("--num-samples", type=int, default=4,
                      help="trials (times each grid value)")
    tune.add_argument("--scheduler", choices=SCHEDULERS, default="fifo",
                      help="fifo, asha (stops weak trials) or pbt (exploits and mutates "
                           "dynamic hyperparameters)")
    tune.add_argument("--pbt-interval", type=int, default=4,
                      help="evaluations between PBT's exploit and explore steps of a trial")
    tune.add_argument("--seeds-per-trial", type=int, default=1,
                      help="agents per trial, vmapped in one process; a trial reports their "
                           "mean eval return")
    tune.add_argument("--storage", required=True,
                      help="folder of the experiment's results and checkpoints (shared by all "
                           "machines of a cluster)")
    tune.add_argument("--name", default="funcsac-tune", help="experiment name (a folder in "
                      "--storage)")
    tune.add_argument("--address", help="Ray cluster to join (auto: the one started with "
                      "`ray start`); default: a local Ray instance")
    tune.add_argument("--cpus-per-trial", type=float, default=1.0)
    tune.add_argument("--gpus-per-trial", type=float, default=0.0,
                      help="GPUs per trial (fractions share one GPU); use with --device cuda")
    tune.add_argument("--resume", action="store_true",
                      help="continue the interrupted experiment STORAGE/NAME")
    _add_settings(tune)
    evaluate = sub.add_parser("evaluate", help="evaluate a trained run's final agent(s) with "
                              "the deterministic policy; rows appended to RUN_DIR/evaluate.csv")
    evaluate.add_argument("run_dir")
    evaluate.add_argument("--episodes", type=int, default=10, help="episodes per agent")
    evaluate.add_argument("--seed", type=int, default=None,
                          help="episode i starts from seed + i (default: the run's eval seeds)")
    evaluate.add_argument("--video", metavar="DIR",
                          help="record every episode to an MP4 in DIR (needs funcsac[video])")
    evaluate.add_argument("--device", default="cpu", help="torch device to act on")
    export = sub.add_parser("export", help="write a trained run's deterministic policy to a "
                            "file that runs without funcsac (torch.export program or ONNX model)")
    export.add_argument("run_dir")
    export.add_argument("--format", required=True, metavar="FORMAT",
                        help="torch-export (.pt2, torch.export.load) or onnx (needs "
                             "funcsac[export])")
    export.add_argument("--out", required=True, help="path of the file to write")
    export.add_argument("--agent", type=int, default=None, metavar="I",
                        help="which agent of a run of several to export")
    collect = sub.add_parser("collect", help="roll out a trained run's policy and save the "
                             "transitions as an offline dataset (.npz)")
    collect.add_argument("run_dir")
    collect.add_argument("--steps", type=int, required=True, help="environment steps to record")
    collect.add_argument("--out", required=True, help="path of the .npz file to write")
    collect.add_argument("--noise", type=float, default=0.0, metavar="STD",
                         help="std of Gaussian noise added to the policy's actions in [-1, 1] "
                              "(default: 0)")
    collect.add_argument("--seed", type=int, default=0,
                         help="episode i starts from seed + i; the policy's and the noise's "
                              "draws come from it too (default: 0)")
    collect.add_argument("--agent", type=int, default=0, metavar="I",
                         help="which agent of a run of several to roll out (default: 0)")
    collect.add_argument("--deterministic", action="store_true",
                         help="act with the policy's mean action instead of sampling")
    plot = sub.add_parser("plot", help="plot eval return against steps for one or more runs: "
                          "one line per experiment, the seeds of runs that differ only in seed "
                          "pooled as mean and spread")
    plot.add_argument("run_dirs", nargs="+", help="run directories or glob patterns")
    plot.add_argument("--out", help="PNG path (default: curve.png in the first run directory)")
    return parser


def _add_settings(parser) -> None:
    """--config, --preset and a flag per setting, by group (``flags.add_settings``)."""
    parser.add_argument("--config", help="TOML or JSON file of settings (flags override it; a "
                        "preset key names a preset, as --preset)")
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help=f"a named configuration, one of {', '.join(sorted(PRESETS))} (give "
                             f"{', '.join(sorted(NEEDS_OFFLINE_DATA))} --offline-data too); "
                             "config file and flags override it")
    add_settings(parser)


def _tune(args) -> None:
    from .tools.tune import TuneSettings, load_settings, results_table, run_tune, searches_of
    settings = None
    if not args.resume:
        settings = TuneSettings(_train_config(args).to_dict(), searches_of(args.search),
                                args.num_samples, args.scheduler, args.seeds_per_trial,
                                args.cpus_per_trial, args.gpus_per_trial, args.pbt_interval)
    results = run_tune(settings, args.storage, args.name, args.address, args.resume)
    path = Path(args.storage).resolve() / args.name
    print(results_table(results, load_settings(path).searches))
    print(f"results in {path}; curves of the best trials in {path / 'best.png'}")


def _train_config(args) -> TrainConfig:
    values = {}
    if args.command == "train" and args.resume:
        saved = Path(args.run_dir) / "config.json"
        if not saved.is_file():
            raise ValueError(f"--resume: {saved} does not exist, so {args.run_dir} holds no run "
                             "to continue")
        values = json.loads(saved.read_text())
        values.pop("agent", None)
    given = load_config_file(args.config) if args.config else {}
    named = args.preset or given.pop("preset", None)  # the flag, or the config file's key
    given.update({name: getattr(args, name) for name in settings() if hasattr(args, name)})
    if named:  # its per-task values for the env the run will have
        env_id = given.get("env_id", values.get("env_id", TrainConfig.field_defaults()["env_id"]))
        values.update(preset(named, env_id))
        for setting, line in per_task_choices(named, env_id).items():
            if setting not in given:  # a flag or the config file sets it otherwise
                print(f"funcsac: {line}")
    values.update(given)
    data = values.get("offline_data")
    if named in NEEDS_OFFLINE_DATA and not data and not getattr(args, "help", False):
        raise ValueError(f"--preset {named} needs --offline-data PATH (a .npz from "
                         "`funcsac collect` or a Minari dataset)")
    if data and isinstance(data, str):  # absolute: found by --resume and Tune trials elsewhere
        values["offline_data"] = str(Path(data).expanduser().absolute())
    for name in FACTORY_FIELDS:  # a FILE.py factory too
        values[name] = absolute_factory_name(values.get(name, ""))
    return TrainConfig.from_dict(values)


def _evaluate(args) -> None:
    from . import evaluate_agent, load
    from .run.logs import CsvLog
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    agent = load(args.run_dir, device=args.device)
    results = evaluate_agent(agent, args.episodes, args.seed, args.video)
    log = CsvLog(Path(args.run_dir) / "evaluate.csv", EVALUATE_COLUMNS)
    for r, spec in zip(results, agent.agent_specs):
        log.write({**dataclasses.asdict(r), "episodes": args.episodes,
                   "seed": agent[r.agent].eval_seed if args.seed is None else args.seed,
                   "agent_seed": spec.seed, "overrides": json.dumps(spec.overrides)})
        print(f"agent {r.agent} (seed {spec.seed}{', ' if spec.overrides else ''}"
              f"{', '.join(f'{k}={v}' for k, v in spec.overrides.items())}) at step {r.step}: "
              f"return {r.return_mean:.2f} +- {r.return_std:.2f}, episode length "
              f"{r.episode_length_mean:.1f} +- {r.episode_length_std:.1f} over {args.episodes} "
              "episodes")
    if args.video:
        print(f"videos in {args.video}")


EVALUATE_COLUMNS = ["step", "agent", "agent_seed", "overrides", "episodes", "seed", "return_mean",
                    "return_std", "episode_length_mean", "episode_length_std"]


def _export(args) -> None:
    from . import load
    from .tools.export import describe_inputs, export_policy
    agent = load(args.run_dir)
    out = export_policy(agent, args.out, args.format, agent_index=args.agent)
    print(f"wrote {out} ({args.format}: {describe_inputs(agent.spec)} -> action "
          f"[B, {agent.spec.act_dim}])")


def _collect(args) -> None:
    from .tools.collect import collect
    collect(args.run_dir, args.steps, args.out, args.noise, args.seed, args.agent,
            args.deterministic)


def _short_help(args) -> None:
    """``funcsac train --help``: the settings the run would take (``flags.short_help``)."""
    given = [f"{flag} {getattr(args, name)}" for flag, name in
             (("--preset", "preset"), ("--config", "config")) if getattr(args, name)]
    source = ", ".join(given) if given else "the defaults"
    print(short_help(_train_config(args), source + (" and the flags given" if any(
        hasattr(args, name) for name in settings()) else "")))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["train"] and {"-h", "--help"} & set(argv) and "--run-dir" not in argv:
        argv += ["--run-dir", "."]  # the short help needs no run directory
    args = build_parser().parse_args(argv)
    from . import plot_runs, train
    from .run.ranks import RankLost
    from .tools.plot import run_dirs_of
    try:
        if args.command == "plot":
            out = plot_runs(args.run_dirs,
                            args.out or run_dirs_of(args.run_dirs)[0] / "curve.png")
            print(f"wrote {out}")
        elif args.command == "tune":
            _tune(args)
        elif args.command == "evaluate":
            _evaluate(args)
        elif args.command == "export":
            _export(args)
        elif args.command == "collect":
            _collect(args)
        elif args.help:
            _short_help(args)
        else:
            train(_train_config(args), args.run_dir, resume=args.resume, overwrite=args.overwrite)
    except ValueError as e:
        print(f"funcsac: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"funcsac: {e or 'interrupted'}", file=sys.stderr)
        return 130
    except RankLost as e:  # a data-parallel run's peer stopped
        print(f"funcsac: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
