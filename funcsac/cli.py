"""Command line: ``funcsac train ...`` and ``funcsac plot RUN_DIR ...``."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
from pathlib import Path

from .driver.config import TrainConfig, help_text, load_config_file
from .presets import PRESETS, preset

_DEFAULTS = TrainConfig()


def _parse_optional(kind):
    """A parser of ``kind`` that reads ``none`` as None (for fields that may be None)."""
    def parse(text: str):
        return None if text.lower() == "none" else kind(text)
    parse.__name__ = kind.__name__
    return parse


def _add_field(parser, field: dataclasses.Field) -> None:
    flag = "--" + field.name.replace("_", "-")
    default = getattr(_DEFAULTS, field.name)
    hint = f"{help_text(field.name)} (default: {default})"
    kind = typing.get_type_hints(TrainConfig)[field.name]
    # flags not given are absent from the parsed namespace, so a given flag always wins, even
    # when its value is None ("none")
    if kind is bool:
        parser.add_argument(flag, action=argparse.BooleanOptionalAction,
                            default=argparse.SUPPRESS, help=hint)
    elif kind is tuple:
        elem = float if field.name == "adam_betas" else int
        parser.add_argument(flag, type=elem, nargs="+", default=argparse.SUPPRESS, help=hint)
    else:
        optional = typing.get_origin(kind) is typing.Union
        base = typing.get_args(kind)[0] if optional else kind
        parser.add_argument(flag, type=_parse_optional(base) if optional else base,
                            default=argparse.SUPPRESS, help=hint)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="funcsac", description="Soft Actor-Critic on gymnasium")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train an agent")
    train.add_argument("--run-dir", required=True, help="folder for logs, checkpoints and plots")
    train.add_argument("--config", help="TOML or JSON file of settings (flags override it)")
    train.add_argument("--preset", choices=sorted(PRESETS),
                       help="a named variant (redq, droq); config file and flags override it")
    train.add_argument("--resume", action="store_true",
                       help="continue from RUN_DIR/checkpoint.pt with RUN_DIR/config.json")
    train.add_argument("--overwrite", action="store_true",
                       help="if RUN_DIR holds a run, move it aside to RUN_DIR.old-TIMESTAMP "
                            "(nothing is deleted) and start a new one")
    for field in dataclasses.fields(TrainConfig):
        _add_field(train, field)
    plot = sub.add_parser("plot", help="plot eval return against steps for one or more runs")
    plot.add_argument("run_dirs", nargs="+")
    plot.add_argument("--out", help="PNG path (default: curve.png in the first run directory)")
    return parser


def _train_config(args) -> TrainConfig:
    values = {}
    if args.resume:
        saved = Path(args.run_dir) / "config.json"
        if not saved.is_file():
            raise ValueError(f"--resume: {saved} does not exist, so {args.run_dir} holds no run "
                             "to continue")
        values = json.loads(saved.read_text())
        values.pop("agent", None)
    if args.preset:
        values.update(preset(args.preset))
    if args.config:
        values.update(load_config_file(args.config))
    values.update({f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)
                   if hasattr(args, f.name)})
    return TrainConfig.from_dict(values)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from .driver import plot_runs, train
    try:
        if args.command == "plot":
            out = plot_runs(args.run_dirs, args.out or Path(args.run_dirs[0]) / "curve.png")
            print(f"wrote {out}")
        else:
            train(_train_config(args), args.run_dir, resume=args.resume, overwrite=args.overwrite)
    except ValueError as e:
        print(f"funcsac: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"funcsac: {e or 'interrupted'}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
