"""The replay buffers of a run on disk, written incrementally: each checkpoint adds one chunk
file holding only the rows added since the previous checkpoint, so its cost does not grow with
the buffer. The checkpoint lists the chunks that still hold live rows; chunks whose rows have
all been overwritten in the ring are deleted once a checkpoint no longer lists them."""
from __future__ import annotations

from pathlib import Path
from typing import List

import torch

from ..run.checkpoint import CheckpointError, save_tensors
from .buffer import ReplayBuffer

FOLDER = "replay"


def _chunk_path(run_dir: Path, agent: int, start: int, stop: int) -> Path:
    return Path(run_dir) / FOLDER / f"agent{agent}" / f"{start:012d}-{stop:012d}.pt"


def save_buffer(run_dir: Path, agent: int, buffer: ReplayBuffer, manifest: dict) -> dict:
    """Write the rows added since ``manifest`` (the buffer's entry of the last checkpoint, or
    ``{}``) to a new chunk file; returns the buffer's new entry. Nothing is deleted here."""
    saved = manifest.get("added", 0)
    chunks = [c for c in manifest.get("chunks", []) if c[1] > buffer.first_held]
    start = max(saved, buffer.first_held)
    if start < buffer.added:
        path = _chunk_path(run_dir, agent, start, buffer.added)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_tensors(path, buffer.rows(start, buffer.added))
        chunks.append([start, buffer.added])
    return {"capacity": buffer.capacity, "added": buffer.added, "chunks": chunks}


def delete_unlisted_chunks(run_dir: Path, manifests: List[dict]) -> None:
    """Delete chunk files that no buffer entry of the (committed) checkpoint lists."""
    for agent, manifest in enumerate(manifests):
        keep = {_chunk_path(run_dir, agent, a, b).name for a, b in manifest["chunks"]}
        folder = Path(run_dir) / FOLDER / f"agent{agent}"
        for path in folder.glob("*.pt") if folder.is_dir() else []:
            if path.name not in keep:
                path.unlink()


def _load_chunk(path: Path, rows: int, buffer: ReplayBuffer) -> dict:
    if not path.is_file():
        raise CheckpointError(f"replay chunk {path} is missing; the checkpoint needs it")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for damaged files
        raise CheckpointError(f"replay chunk {path} is corrupt or unreadable "
                              f"({type(e).__name__}: {e})") from e
    if not isinstance(data, dict) or set(data) != set(buffer.data):
        raise CheckpointError(f"replay chunk {path} should hold the fields {sorted(buffer.data)}, "
                              f"got {sorted(data) if isinstance(data, dict) else type(data)}")
    for field, store in buffer.data.items():
        x = data[field]
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != (rows, *store.shape[1:]):
            raise CheckpointError(f"replay chunk {path}: field {field} should have shape "
                                  f"{[rows, *store.shape[1:]]}, got "
                                  f"{list(x.shape) if isinstance(x, torch.Tensor) else x!r}")
    return data


def load_buffer(run_dir: Path, agent: int, buffer: ReplayBuffer, manifest: dict) -> None:
    """Refill an empty ``buffer`` from the chunk files its checkpoint entry lists."""
    try:
        capacity, added, chunks = manifest["capacity"], manifest["added"], manifest["chunks"]
    except (KeyError, TypeError) as e:
        raise CheckpointError(f"checkpoint's replay buffer entry is malformed ({e!r})") from e
    if capacity != buffer.capacity:
        raise CheckpointError(f"checkpoint buffer capacity {capacity} != {buffer.capacity}")
    for start, stop in chunks:
        batch = _load_chunk(_chunk_path(run_dir, agent, start, stop), stop - start, buffer)
        first = max(start, added - buffer.slots)
        buffer.write(first, {k: x[first - start:] for k, x in batch.items()})
    buffer.added = added
    covered = sum(min(b, added) - max(a, added - buffer.slots) for a, b in chunks)
    if covered != added - buffer.first_held:
        raise CheckpointError(f"checkpoint's replay chunks hold {covered} live rows, expected "
                              f"{added - buffer.first_held}")
