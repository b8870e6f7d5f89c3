"""Atomic checkpoints of a whole run, and their validation on load."""
from __future__ import annotations

from pathlib import Path

import optree
import torch

from ...registry import NAMESPACE
from ...state import SACState
from ...platform.files import write_atomically

CHECKPOINT = "checkpoint.pt"  # the file name of a run's checkpoint in its run directory
FORMAT = "funcsac-run-checkpoint"
VERSION = 2


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable or does not belong to this run."""


def save_checkpoint(path: Path, payload: dict) -> None:
    """Write ``payload`` (tensors, numbers, strings and containers of them) to ``path``
    atomically."""
    save_tensors(path, {"format": FORMAT, "version": VERSION, **payload})


def save_tensors(path: Path, data) -> None:
    """``torch.save(data)`` to ``path`` atomically; an OS error (a full disk, say) becomes a
    ``CheckpointError`` saying that the previous file is intact."""
    try:
        write_atomically(path, lambda f: torch.save(data, f))
    except OSError as e:
        raise CheckpointError(f"could not write {path} ({e}); the previous version of it, if "
                              "any, is intact") from e


def load_checkpoint(path: Path) -> dict:
    """Read a checkpoint; raise ``CheckpointError`` saying what is wrong with it."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}: nothing to resume")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for damaged files
        raise CheckpointError(f"checkpoint {path} is corrupt or unreadable ({type(e).__name__}: "
                              f"{e}); delete it to start over, or restore a copy") from e
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a funcsac run checkpoint")
    if payload.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path} has format version {payload.get('version')}, "
                              f"this funcsac reads version {VERSION}")
    return payload


def state_leaves(state: SACState) -> list:
    """The state's tensors on the CPU, in pytree order."""
    return [x.detach().cpu() for x in optree.tree_leaves(state, namespace=NAMESPACE)]


def restore_state(template: SACState, leaves: list) -> SACState:
    """``template``'s structure filled with checkpointed tensors (shapes and dtypes checked)."""
    expected, spec = optree.tree_flatten(template, namespace=NAMESPACE)
    if len(leaves) != len(expected):
        raise CheckpointError(f"checkpointed agent has {len(leaves)} tensors, this config needs "
                              f"{len(expected)}")
    for i, (got, want) in enumerate(zip(leaves, expected)):
        if got.shape != want.shape or got.dtype != want.dtype:
            raise CheckpointError(f"checkpointed agent tensor {i} is {got.dtype}{list(got.shape)}, "
                                  f"this config needs {want.dtype}{list(want.shape)}")
    return optree.tree_unflatten(spec, [g.to(w.device) for g, w in zip(leaves, expected)])
