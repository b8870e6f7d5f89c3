"""Atomic file writes: a crash or a full disk leaves either the old or the new file whole."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, write) -> None:
    """Call ``write(file)`` on a new binary temporary file in ``path``'s folder, fsync it, rename
    it over ``path`` and fsync the folder. On any failure the temporary file is removed and
    ``path`` is untouched."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        os.chmod(tmp, 0o666 & ~_umask())  # the mode a plain open() would give, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
