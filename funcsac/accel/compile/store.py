"""The compile store on disk: a private folder of signed files.

The store trusts only what this user wrote, since loading a compiled function unpickles it and
runs its shared library. It is a private directory: ``$FUNCSAC_COMPILE_STORE``, else ``compile``
in funcsac's cache folder (``funcsac.platform.files.cache_folder``), created with mode 0700 and
refused when another user owns it or its group or others may write to it. Each file starts with
the HMAC-SHA256 of the rest under the store's random key (the file ``key``, mode 0600, refused
when another user owns it or others may read it), checked on the bytes read once, before anything
is unpickled; a file that fails is removed and compiled again. A function's library is built in a
folder of its own in the store, which the function records; the stored file holds the folder's
files, and loading writes them back before torch loads the library, so neither inductor's cache
nor another compile changes what a stored function runs. Files are written whole
(``funcsac.platform.files``).

The store keeps itself small (``prune_store``, after each save): a function not loaded for 30
days goes, then the least recently used ones beyond 2 GiB (each holds a compiled library of 5 to
10 MB), and build folders left for a day that no stored function restores into.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import os
import pickle
import secrets
import shutil
import time
import warnings
from pathlib import Path
from typing import Optional

import torch

from ...platform.files import cache_folder, write_atomically, written_temporary

STORE_ENV = "FUNCSAC_COMPILE_STORE"
KEY_FILE, KEY_BYTES, MAC_BYTES = "key", 32, 32
DAY_S = 86400.0
MAX_AGE_S, MAX_BYTES = 30 * DAY_S, 2 * 2**30  # prune_store's limits


class UnsafeStore(OSError):
    """A store that other users could have written to (or whose key they could read)."""


def store_dir() -> Path:
    """Where compiled functions are kept: ``$FUNCSAC_COMPILE_STORE``, else ``compile`` in
    funcsac's cache folder."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV])
    return cache_folder("compile")


def _check_private(st: os.stat_result, what: str, forbidden: int) -> None:
    """Raise ``UnsafeStore`` unless ``st`` belongs to this user and its mode has none of the
    permission bits ``forbidden``."""
    if st.st_uid != os.geteuid():
        raise UnsafeStore(f"{what} belongs to user {st.st_uid}, not to this user "
                          f"({os.geteuid()})")
    if st.st_mode & forbidden:
        raise UnsafeStore(f"{what} has mode {st.st_mode & 0o777:o}: it must grant group and "
                          f"others none of {forbidden:o}")


def _create_key(path: Path) -> None:
    """A new random key at ``path`` (mode 0600), unless one is there: it appears whole or not at
    all (a linked temporary file), so concurrent processes all end up with the first one."""
    key = secrets.token_bytes(KEY_BYTES)
    tmp = written_temporary(path.parent, ".key-", lambda f: f.write(key), private=True)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


def store_key(directory: Path) -> bytes:
    """The secret key of the store ``directory``, which is created (mode 0700) if need be, and
    its key too. Raises ``UnsafeStore`` when the directory belongs to another user or its group
    or others may write to it, or the key file belongs to another user or its group or others
    may use it."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(os.stat(directory), f"compile store {directory}", 0o022)
    path = directory / KEY_FILE
    if not path.exists():
        _create_key(path)
    with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
        _check_private(os.fstat(f.fileno()), f"compile store key {path}", 0o077)
        key = f.read()
    if len(key) != KEY_BYTES:
        raise UnsafeStore(f"compile store key {path} does not hold {KEY_BYTES} bytes")
    return key


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


def _verified(key: bytes, data: bytes) -> Optional[bytes]:
    """The body of a stored file's bytes ``data`` (its HMAC under ``key``, then the body) when
    the HMAC is right, else ``None``."""
    mac, body = data[:MAC_BYTES], data[MAC_BYTES:]
    return body if hmac.compare_digest(mac, _mac(key, body)) else None


def _restore(directory: Path, body: bytes) -> tuple:
    """``(serialized function, output structure)`` of the verified ``body`` of a stored file of
    ``directory``, after writing the files of its build folder back there, whatever is there now:
    the function loads its shared library from that folder."""
    stored = pickle.loads(body)
    build = directory / Path(stored["build"]).name
    build.mkdir(mode=0o700, exist_ok=True)
    for name, data in stored["files"].items():
        target = build / Path(name).name
        write_atomically(target, lambda f: f.write(data), private=True)
    return stored["function"], stored["structure"]


def _load(path: Path, key: bytes) -> Optional[tuple]:
    """``(compiled function, output structure)`` stored at ``path``; ``None`` when there is none,
    or when it is not signed with ``key`` or cannot be loaded (then it is removed, with a
    warning)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    body = _verified(key, data)
    if body is None:
        why = "is not signed with this store's key (damaged, or not written by this user)"
    else:
        try:
            function, structure = _restore(path.parent, body)
            loaded = torch.compiler.load_compiled_function(io.BytesIO(function)), structure
        except Exception as e:  # signed but foreign to this torch: compile again and replace it
            why = f"cannot be loaded ({e!r})"
        else:
            with contextlib.suppress(OSError):  # its time of last use, for prune_store
                os.utime(path)
            return loaded
    warnings.warn(f"{path} {why}; removed, compiling again", stacklevel=3)
    path.unlink(missing_ok=True)
    return None


def _save(path: Path, key: bytes, compiled, structure, build: Path) -> None:
    """``compiled`` and its output ``structure`` (``_compile_ahead``'s) saved at ``path`` with
    the files of its build folder ``build``, signed with ``key``; the file is replaced whole."""
    body = pickle.dumps({"function": type(compiled).serialize(compiled).serialized_data,
                         "structure": structure, "build": build.name,
                         "files": {f.name: f.read_bytes() for f in build.iterdir() if f.is_file()}})
    write_atomically(path, lambda f: f.write(_mac(key, body) + body), private=True)


def prune_store(directory: Path, keep: Path, now: Optional[float] = None,
                max_age_s: float = MAX_AGE_S, max_bytes: int = MAX_BYTES) -> list:
    """Remove from the store ``directory`` the stored functions not used (loaded or saved: a
    file's modification time) for ``max_age_s`` seconds, then the least recently used ones
    until the rest take at most ``max_bytes``, never ``keep``; then the build folders not
    modified for a day, except the newest one of each function still stored (an older one was
    left by a compile that stopped or was replaced; a folder a function records is rewritten
    when it loads, so none of them is needed to load), and temporary files a day old (a writer
    killed before its rename). ``now``: the time (default the clock's).
    Returns the paths removed."""
    now = time.time() if now is None else now
    stat = {p: p.stat() for p in directory.glob("*.pt2")}
    removed, total = [], 0
    for path in sorted(stat, key=lambda p: stat[p].st_mtime, reverse=True):
        total += stat[path].st_size
        if path != keep and (now - stat[path].st_mtime > max_age_s or total > max_bytes):
            path.unlink(missing_ok=True)
            removed.append(path)
            total -= stat[path].st_size
    folders = sorted((p for p in directory.glob(".*-*") if p.is_dir()),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    newest = {}
    for folder in folders:
        stem = folder.name[1:].rsplit("-", 1)[0]
        held = (directory / f"{stem}.pt2").exists() and stem not in newest
        newest.setdefault(stem, folder)
        if not held and now - folder.stat().st_mtime > DAY_S:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    for tmp in directory.glob("*.tmp"):  # a writer killed before its rename left it
        if now - tmp.stat().st_mtime > DAY_S:
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed

