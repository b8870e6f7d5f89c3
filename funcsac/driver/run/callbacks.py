"""Callbacks: user code called after each record stage that logged or evaluated, which may stop
the run (it then ends with a checkpoint and can be resumed)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, List, Optional

from ...state import SACState
from ..tools.evaluate import EvalResult


@dataclasses.dataclass(frozen=True)
class Report:
    """What a callback sees: the rows this record stage wrote (one per agent) to metrics.csv
    (``logs``) and eval.csv (``evals``), either possibly empty, at env step ``step``; whether a
    checkpoint was written at this step; the run directory and the agents' state (stacked when
    the run has several)."""

    step: int
    logs: List[dict]
    evals: List[EvalResult]
    checkpointed: bool
    run_dir: Path
    state: SACState


Callback = Callable[[Report], Optional[bool]]


def call_all(callbacks: List[Callback], report: Report) -> bool:
    """Call every callback with ``report``; True if any returned a true value (stop the run)."""
    answers = [callback(report) for callback in callbacks]
    return any(bool(a) for a in answers)
