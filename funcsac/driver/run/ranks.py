"""A data-parallel run's ranks: one process per device, started by ``torchrun`` (or by code that
set up ``torch.distributed`` itself, as Ray Train does), each with its own environments, replay
buffer and run directory, all taking the same gradient steps (``funcsac.parallel``).

Rank 0 writes into the run directory and evaluates; rank ``r > 0`` keeps its replay, checkpoint
and logs in ``RUN_DIR/ranks/r``. The ranks agree every step on whether to stop (an interrupt
reaching any of them stops all at the same step, each with its checkpoint) and compare their
states at every checkpoint. A rank that dies ends the others at their next collective with
``RankLost``; the checkpoints written before stay as they were.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import re
from pathlib import Path
from typing import Any, Callable, Optional

import optree
import torch
import torch.distributed as dist

from ...parallel import Ranks, state_digest
from ...registry import NAMESPACE

# how long a rank waits for the others at a collective before it gives up
TIMEOUT = datetime.timedelta(minutes=10)


class RankLost(RuntimeError):
    """Another rank of a data-parallel run stopped (it failed, or was killed)."""


@dataclasses.dataclass(frozen=True)
class RunRanks(Ranks):
    """``Ranks`` with ``control``, a gloo group of the same processes for the host's messages
    (None in a world of one)."""

    control: Any = None


def launched_world() -> int:
    """The ranks a launcher (``torchrun``) started this process among: ``WORLD_SIZE``, or 1."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank_dir(run_dir: Path, ranks: Ranks) -> Path:
    """Where rank ``ranks.rank`` of a run keeps its files: ``run_dir`` for rank 0, else
    ``run_dir/ranks/<rank>``."""
    return run_dir if ranks.rank == 0 else run_dir / "ranks" / str(ranks.rank)


def rank_device(device: str) -> str:
    """The device of this rank: ``cuda:<LOCAL_RANK>`` for a run on ``cuda``, else ``device``."""
    if device == "cuda" and "LOCAL_RANK" in os.environ:
        return f"cuda:{os.environ['LOCAL_RANK']}"
    return device


@contextlib.contextmanager
def joined(device: str):
    """The run's ``Ranks``: a world of one, the process group a caller set up, or one set up here
    from a launcher's environment (NCCL on CUDA, gloo on the CPU; ended on the way out); the
    control messages (stop, state digests) always go over gloo."""
    if dist.is_available() and dist.is_initialized():
        yield _with_control(Ranks.current())
        return
    if launched_world() == 1:
        yield RunRanks()
        return
    backend = "nccl" if torch.device(device).type == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(torch.device(rank_device(device)))
    dist.init_process_group(backend, timeout=TIMEOUT)
    try:
        yield _with_control(Ranks.current())
    finally:
        dist.destroy_process_group()


def _with_control(ranks: Ranks) -> "RunRanks":
    """``ranks`` with a gloo group of the same processes for the host's control messages."""
    if ranks.world == 1:
        return RunRanks()
    control = (ranks.group if dist.get_backend(ranks.group) == "gloo"
               else dist.new_group(backend="gloo", timeout=TIMEOUT))
    return RunRanks(ranks.rank, ranks.world, ranks.group, control)


def any_rank(ranks: Ranks, *flags: bool) -> list:
    """Each of ``flags`` true on any rank (itself in a world of one): one all-reduce."""
    if ranks.world == 1:
        return list(flags)
    values = torch.tensor([float(f) for f in flags])
    with lost_rank_is_an_error(ranks):
        dist.all_reduce(values, dist.ReduceOp.MAX, group=ranks.control)
    return [bool(v) for v in values]


def gathered(ranks: Ranks, value: torch.Tensor, on_device: bool = False) -> torch.Tensor:
    """``value`` (the same shape on every rank) of every rank, stacked ``[world, ...]``: over
    the control group (a CPU tensor), or ``on_device`` over the update's group (a tensor on the
    training device); bool tensors travel as uint8."""
    wire = value.to(torch.uint8) if value.dtype == torch.bool else value.contiguous()
    out = [torch.empty_like(wire) for _ in range(ranks.world)]
    with lost_rank_is_an_error(ranks):
        dist.all_gather(out, wire, group=ranks.group if on_device else ranks.control)
    return torch.stack(out).to(value.dtype)


def from_rank_zero(ranks: Ranks, state):
    """``state`` (a fresh one, whose tensors no one else holds) with rank 0's values in every
    tensor: the ranks start from the same state even where their kernels round its
    initialisation differently (an orthogonal init's QR on another BLAS path). From there the
    averaged gradients keep them equal."""
    if ranks.world == 1:
        return state
    with lost_rank_is_an_error(ranks):
        for leaf in optree.tree_leaves(state, namespace=NAMESPACE):
            if isinstance(leaf, torch.Tensor):
                dist.broadcast(leaf, src=0, group=ranks.group)
    return state


def check_same_state(ranks: Ranks, state, step: int) -> None:
    """``RuntimeError`` unless every rank holds the same state (compared by ``state_digest``)
    at env step ``step``."""
    if ranks.world == 1:
        return
    digests = gathered(ranks, state_digest(state))
    if not (digests == digests[0]).all():
        raise RuntimeError(
            f"the ranks' agents differ at env step {step:,}: something changed the state from "
            "a rank's own data without combining it over the ranks (a step of the algorithm "
            "outside Losses.combine, or statistics of the rank's own observations), or a rank "
            "started from another state")


@contextlib.contextmanager
def lost_rank_is_an_error(ranks: Ranks, checkpointed: Optional[Callable[[], Optional[str]]] = None):
    """A failed collective (a peer died, or timed out) raised as ``RankLost``, which names the
    last checkpoint where ``checkpointed()`` says where it lies (None: none yet)."""
    try:
        yield
    except (RuntimeError, dist.DistError) as e:
        origin = e.__cause__ if isinstance(e, RankLost) and e.__cause__ is not None else e
        if ranks.world == 1 or not _collective_failure(origin):
            raise
        if isinstance(e, RankLost) and checkpointed is None:
            raise
        said = (f"rank {ranks.rank} of {ranks.world}: another rank stopped ({_reason(origin)}); "
                "this rank stops too")
        if checkpointed is not None:
            last = checkpointed()
            said += (f"; the last checkpoint, {last}, is intact: start every rank again with "
                     "--resume" if last else "; no checkpoint was written yet")
        raise RankLost(said) from origin


def _reason(e: BaseException) -> str:
    """The first sentence of a collective's error, without the source location gloo puts
    first."""
    line = re.sub(r"^\[[^\]]*\]\s*", "", (str(e).splitlines() or [""])[0])
    return line.split(". ")[0][:200]


def _collective_failure(e: BaseException) -> bool:
    """Whether ``e`` is a collective's failure (a closed connection, a timeout, an aborted
    communicator) rather than an error of the step's own."""
    text = str(e).lower()
    return isinstance(e, dist.DistError) or any(w in text for w in (
        "connection", "timed out", "timeout", "gloo", "nccl", "peer", "broken pipe", "abort"))


def observed_on_every_rank(observe_fn, ranks: Ranks):
    """``observe_fn(state, *rows)`` on the rows of every rank (each ``rows`` tensor ``[n, ...]``
    gathered to ``[world * n, ...]``, rank-major), so the ranks' normalisation statistics stay
    the same, those of one process stepping all their environments; ``observe_fn`` itself in a
    world of one."""
    if ranks.world == 1:
        return observe_fn

    def observe_all(state, *rows):
        return observe_fn(state, *(gathered(ranks, x, on_device=True).flatten(0, 1) for x in rows))
    return observe_all
