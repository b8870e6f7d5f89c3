"""The command line's settings: a flag per setting (``config.settings``), grouped as
``TrainConfig``'s groups and the registered variants' options, and the short help, ``funcsac train
--help``: every flag with the value the run would take, by group, in a screen (``--help-all``: each
flag's meaning, argparse's full help)."""
from __future__ import annotations

import argparse
import dataclasses
import shlex
import textwrap
import typing

from .. import registry
from ..registry import COMPONENTS
from .config import TrainConfig, settings
from .presets import PRESETS

WIDTH = 100


def groups() -> dict:
    """``{title: [setting names]}`` in ``TrainConfig``'s order (its groups' ``GROUP``, those of
    one title together), then one group per component's options."""
    found: dict = {}
    for base in reversed(TrainConfig.__mro__):
        if dataclasses.is_dataclass(base) and "GROUP" in vars(base):
            found.setdefault(base.GROUP, []).extend(
                f.name for f in dataclasses.fields(base) if f.name in vars(base)["__annotations__"])
    for name, (_, _, owners) in registry.option_fields().items():
        component = next(iter(owners)).split()[0]
        found.setdefault(f"{component} options", []).append(name)
    return found


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def _parse_optional(kind):
    """A parser of ``kind`` that reads ``none`` as None (for fields that may be None)."""
    def parse(text: str):
        return None if text.lower() == "none" else kind(text)
    parse.__name__ = kind.__name__
    return parse


def add_setting(parser, name: str, kind, default, help: str) -> None:
    """A flag for the setting ``name`` of type ``kind``."""
    flag = flag_of(name)
    hint = f"{help} (default: {'none' if default is None else default})"
    # flags not given are absent from the parsed namespace, so a given flag always wins, even
    # when its value is None ("none")
    if kind is bool:
        parser.add_argument(flag, action=argparse.BooleanOptionalAction,
                            default=argparse.SUPPRESS, help=hint)
    elif typing.get_origin(kind) is tuple:  # Tuple[int, ...] or Tuple[float, ...]; none: empty
        parser.add_argument(flag, type=typing.get_args(kind)[0], nargs="*",
                            default=argparse.SUPPRESS, help=hint)
    else:
        optional = typing.get_origin(kind) is typing.Union
        base = typing.get_args(kind)[0] if optional else kind
        parser.add_argument(flag, type=_parse_optional(base) if optional else base,
                            default=argparse.SUPPRESS, help=hint)


def add_settings(parser) -> None:
    """A flag per setting, in an argument group per ``groups()`` title."""
    every = settings()
    for title, names in groups().items():
        group = parser.add_argument_group(title)
        for name in names:
            add_setting(group, name, *every[name])


def shown(name: str, value) -> str:
    """The flag that sets ``name`` to ``value``, as a command line reads it."""
    if isinstance(value, bool):
        return flag_of(name) if value else "--no-" + flag_of(name)[2:]
    if isinstance(value, (tuple, list)):
        return " ".join([flag_of(name), *map(str, value)]) if value else flag_of(name)
    return f"{flag_of(name)} {'none' if value is None else shlex.quote(str(value))}"


def short_help(config: TrainConfig, source: str) -> str:
    """``funcsac train --help``: the flags that give ``config`` (made from ``source``, such as
    "the defaults" or "--preset tqc"), by group, each flag with its value; the chosen variants'
    options only."""
    values = {**{f.name: getattr(config, f.name) for f in dataclasses.fields(config)},
              **config.options}
    chosen = ", ".join(f"{component} {getattr(config, component)}" for component in COMPONENTS)
    lines = ["usage: funcsac train --run-dir DIR [--preset NAME] [--config FILE] "
             "[--resume | --overwrite] [--SETTING VALUE ...]", "",
             f"Each setting with the value this run takes ({source}; {chosen}). `none` leaves a "
             "setting to the environment or the policy family; `funcsac train --help-all` says "
             "what each setting means and lists every variant's options.", ""]
    lines = [w for line in lines for w in (textwrap.wrap(line, WIDTH) or [""])]
    for title, names in groups().items():
        names = [n for n in names if n in values]
        if names:
            lines.append(f"{title}:")
            lines += packed([shown(n, values[n]) for n in names])
    lines += [""] + packed(["presets:", *sorted(PRESETS)], first="")
    for component in COMPONENTS:
        lines += packed([f"{component}s:", *sorted({v.name for r, v in registry.variants()
                                                if r == component})], first="")
    return "\n".join(lines)


def packed(items: list, first: str = "  ", indent: str = "  ") -> list:
    """``items`` three spaces apart on lines of at most ``WIDTH`` characters (an item longer
    stands alone), the first line starting with ``first``, the others with ``indent``."""
    lines, line = [], first + items[0]
    for item in items[1:]:
        if len(line) + 3 + len(item) > WIDTH:
            lines.append(line)
            line = indent + item
        else:
            line += "   " + item
    return lines + [line]
