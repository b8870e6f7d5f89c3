"""Search spaces of a sweep, as written on the command line: ``NAME=KIND(ARGS)``."""
from __future__ import annotations

import ast
import dataclasses

from ...state import HParams
from ..config import settings

KINDS = {"loguniform": 2, "uniform": 2, "randint": 2, "choice": None, "grid": None}


@dataclasses.dataclass(frozen=True)
class Search:
    """One searched setting: a ``TrainConfig`` field, the kind of its distribution (``KINDS``)
    and the distribution's arguments (bounds, or the values to choose from)."""

    name: str
    kind: str
    args: tuple

    @property
    def dynamic(self) -> bool:
        """Whether the setting is a dynamic hyperparameter (a leaf of the state), which a
        trial can change while it runs."""
        return self.name in HParams._fields


def parse_search(text: str) -> Search:
    """``"critic_lr=loguniform(1e-4,3e-3)"`` -> ``Search("critic_lr", "loguniform", (1e-4, 3e-3))``.
    Arguments are Python literals, so ``"hidden_sizes=choice((64,64),(256,256))"`` works."""
    fields = settings()
    usage = ("--search must look like NAME=KIND(ARGS) with KIND one of "
             f"{', '.join(KINDS)}, e.g. critic_lr=loguniform(1e-4,3e-3)")
    name, sep, spec = text.partition("=")
    name = name.strip().replace("-", "_")
    kind, paren, rest = spec.strip().partition("(")
    if not sep or not paren or not rest.endswith(")") or kind not in KINDS:
        raise ValueError(f"{usage}; got {text!r}")
    if name not in fields:
        raise ValueError(f"--search {text!r}: {name!r} is not a setting; settings: "
                         f"{sorted(fields)}")
    try:
        args = ast.literal_eval(f"({rest[:-1]},)")
    except (ValueError, SyntaxError) as e:
        raise ValueError(f"--search {text!r}: arguments must be Python literals ({e})") from e
    count = KINDS[kind]
    if (count is not None and len(args) != count) or len(args) == 0:
        raise ValueError(f"--search {text!r}: {kind} takes "
                         f"{count or 'one or more'} argument(s), got {len(args)}")
    if count is not None and not all(isinstance(a, (int, float)) for a in args):
        raise ValueError(f"--search {text!r}: {kind} bounds must be numbers")
    if kind == "loguniform" and not 0 < args[0] < args[1]:
        raise ValueError(f"--search {text!r}: loguniform needs 0 < low < high")
    return Search(name, kind, args)
