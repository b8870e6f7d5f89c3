"""Files written whole, and funcsac's cache folder. A write goes to a temporary file in the
target's folder, flushed to disk, then renamed over the target, so a crash or a full disk leaves
either the old or the new file whole; a writer killed before its rename leaves a ``*.tmp`` file,
which a reader ignores."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import platformdirs


def cache_folder(*parts: str) -> Path:
    """``parts`` under funcsac's folder in the user's cache (platformdirs: on Linux
    ``$XDG_CACHE_HOME/funcsac``, else ``~/.cache/funcsac``; on macOS ``~/Library/Caches/funcsac``);
    nothing is created."""
    return platformdirs.user_cache_path("funcsac").joinpath(*parts)


def writable(path: Path) -> Path:
    """``path``, checked to be writable as a new file: ``ValueError`` if a file stands where it
    or one of its folders would be; its missing folders are created when it is written
    (``write_atomically``)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"cannot write {path}: it is a folder")
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ValueError(f"cannot write {path}: {blocking} is a file, not a folder")
    return path


def written_temporary(directory: Path, prefix: str, write, private: bool = False) -> str:
    """The path of a new file ``prefix*.tmp`` in ``directory``, filled by ``write(file)`` (a
    binary file) and flushed to disk; its mode is a plain ``open()``'s, or 0600 if
    ``private``. On failure the file is removed."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if not private:  # the mode a plain open() would give, not mkstemp's 0600
                os.fchmod(f.fileno(), 0o666 & ~_umask())
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_atomically(path: Path, write, private: bool = False) -> None:
    """Call ``write(file)`` on a new binary temporary file in ``path``'s folder (created if
    missing; ``written_temporary``), rename it over ``path`` and fsync the folder. On any failure
    the temporary file is removed and ``path`` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = written_temporary(path.parent, path.name + ".", write, private)
    try:
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
