"""Compiled functions kept on disk: a new process loads what an earlier one compiled for the same
code, inputs and machine (about a second) instead of compiling again (tens of seconds).

``compile_stored(fn, args, name)`` compiles ``fn`` ahead of time with AOTInductor for the exact
pytree structure, shapes, dtypes and devices of ``args`` and saves it under a key made of
``name``, that structure (the configs' static fields included), what ``fn`` computes and the code
each state's config chooses (``funcsac.fingerprint`` of ``fn``, of the algorithm's record
(``funcsac.registry.algorithm_of``: its losses and settings), of the policy family and of the
network factories: their code, closures and the functions they call, user code included),
funcsac's own source files, the torch, numpy, optree and Python versions and the machine (CPU
flags, GPU model). The saved function has no guards: each call checks that its inputs still have
the structure, shapes, dtypes and devices it was compiled for and raises ``ValueError`` if not.
It returns its output's tensors only, and the call rebuilds the output from the structure stored
with it, so that no class is looked up inside the saved code (see ``_leaves_of``).

The key leaves out the config fields that only give the initial values of the state's dynamic
hyperparameters (``INITIAL_VALUE_FIELDS``): runs that differ only in those share one compiled
function, so a stored function must read them from ``state.hparams``, never from the config, as
funcsac's own functions do.

Loading a compiled function unpickles it and runs its shared library, so the store trusts only
what this user wrote. It is a private directory: ``$FUNCSAC_COMPILE_STORE``, else
``funcsac/compile`` in ``$XDG_CACHE_HOME`` (else ``~/.cache``), created with mode 0700 and refused
when another user owns it or its group or others may write to it. Each file starts with the
HMAC-SHA256 of the rest under the store's random key (the file ``key``, mode 0600, refused when
another user owns it or others may read it), checked on the bytes read once, before anything is
unpickled; a file that fails is removed and compiled again. A function's library is built in a
folder of its own in the store, which the function records; the stored file holds the folder's
files, and loading writes them back before torch loads the library, so neither inductor's cache
nor another compile changes what a stored function runs. Files are written whole to a temporary
file, then renamed.

The store keeps itself small (``prune_store``, after each save): a function not loaded for 30
days goes, then the least recently used ones beyond 2 GiB (each holds a compiled library of 5 to
10 MB), and build folders left for a day that no stored function restores into.

Where the store cannot be used (a torch other than the release it is written for,
``STORE_TORCH``; ``fn`` or the code its inputs choose cannot be fingerprinted; the store is
refused; AOTInductor fails), ``fn`` is compiled with ``torch.compile``, after a one-line warning.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import io
import os
import pickle
import platform
import secrets
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable, Optional

import numpy
import optree
import torch
import torch.utils._cxx_pytree as cxx_pytree  # optree's speed, and dynamo traces it
from torch._guards import TracingContext, tracing
from torch._subclasses import FakeTensorMode

from .compile import compile_update
from .config import INITIAL_VALUE_FIELDS
from .fingerprint import Unfingerprintable, fingerprint
from .cpu import cpu_description
from .state import SACState, static_for
from .registry import POLICIES, algorithm_of, variant_of

STORE_ENV = "FUNCSAC_COMPILE_STORE"
KEY_FILE, KEY_BYTES, MAC_BYTES = "key", 32, 32
DAY_S = 86400.0
MAX_AGE_S, MAX_BYTES = 30 * DAY_S, 2 * 2**30  # prune_store's limits
# the wrapper (the C++ that calls the kernels) is built without optimisation or precompiled
# headers: seconds less to compile, the same update time. The kernels stay vectorised: scalar
# loops left to g++ compiled in a third of the time but made the update 1.85x slower on an AMD
# EPYC (AVX2), 10.9 against 5.9 ms (bench/ANALYSIS.md)
# the torch release whose ahead-of-time compile and loading (private parts included) the store
# is written for; under another, functions are compiled with torch.compile (inductor's own cache)
STORE_TORCH = "2.13"
OPTIONS = {"use_aoti": True,
           "guard_filter_fn": getattr(torch.compiler, "skip_all_guards_unsafe", None),
           "aot_inductor.precompile_headers": False,
           "aot_inductor.compile_wrapper_opt_level": "O0",
           "aot_inductor.enable_line_tables": False}


class UnsafeStore(OSError):
    """A store that other users could have written to (or whose key they could read)."""


def store_dir() -> Path:
    """Where compiled functions are kept: ``$FUNCSAC_COMPILE_STORE``, else ``funcsac/compile``
    in the user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "funcsac/compile"


def _check_private(st: os.stat_result, what: str, forbidden: int) -> None:
    """Raise ``UnsafeStore`` unless ``st`` belongs to this user and its mode has none of the
    permission bits ``forbidden``."""
    if st.st_uid != os.geteuid():
        raise UnsafeStore(f"{what} belongs to user {st.st_uid}, not to this user "
                          f"({os.geteuid()})")
    if st.st_mode & forbidden:
        raise UnsafeStore(f"{what} has mode {st.st_mode & 0o777:o}: it must grant group and "
                          f"others none of {forbidden:o}")


def _write_temporary(directory: Path, prefix: str, data: bytes) -> str:
    """The path of a new file in ``directory`` (mode 0600) holding ``data``, flushed to disk."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _create_key(path: Path) -> None:
    """A new random key at ``path`` (mode 0600), unless one is there: it appears whole or not at
    all (a linked temporary file), so concurrent processes all end up with the first one."""
    tmp = _write_temporary(path.parent, ".key-", secrets.token_bytes(KEY_BYTES))
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
        os.replace(_write_temporary(build, target.name + ".", data), target)
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


def _leaves_of(fn: Callable) -> Callable:
    """``fn`` returning the tensors of its output as a flat tuple. What a stored
    function returns is rebuilt outside it (``StoredFunction``): torch 2.13's saved bytecode
    finds the class of a pytree output by its position among the pytree types registered in the
    process, which differs from one process to another (importing ``torch.distributed.tensor``
    before funcsac turned a loaded update's ``SACState`` into another class)."""
    def leaves(*args):
        return tuple(cxx_pytree.tree_leaves(fn(*args)))
    return leaves


def _output_structure(fn: Callable, args: tuple):
    """The pytree structure of ``fn(*args)``, found with fake tensors (no arithmetic), each
    state's static fields left out (``StoredFunction`` puts the caller's back)."""
    with FakeTensorMode() as mode:
        fake = optree.tree_map(lambda x: mode.from_tensor(x) if isinstance(x, torch.Tensor)
                               else x, args)
        out = fn(*fake)
    return cxx_pytree.tree_structure(_with_static(out, None))


def _compile_ahead(fn: Callable, args: tuple, build: Path):
    """``(compiled, structure)``: ``fn`` compiled ahead of time for ``args`` (contiguous) to
    return its output's leaves, its shared library built in the folder ``build``, which the
    compiled function records, and its output's structure (``_output_structure``)."""
    # static shapes whatever earlier compiles of the same code saw; a copy of the options, since
    # torch.compile pops entries from them
    options = {**OPTIONS, "aot_inductor.output_path": str(build)}
    compiled = torch.compile(_leaves_of(fn), fullgraph=True, dynamic=False,
                             options=options).aot_compile((args, {}))
    return compiled, _output_structure(fn, args)


def _save(path: Path, key: bytes, compiled, structure, build: Path) -> None:
    """``compiled`` and its output ``structure`` (``_compile_ahead``'s) saved at ``path`` with
    the files of its build folder ``build``, signed with ``key``; the file is replaced whole."""
    body = pickle.dumps({"function": type(compiled).serialize(compiled).serialized_data,
                         "structure": structure, "build": build.name,
                         "files": {f.name: f.read_bytes() for f in build.iterdir() if f.is_file()}})
    os.replace(_write_temporary(path.parent, path.name + ".", _mac(key, body) + body), path)


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


@functools.lru_cache(maxsize=None)
def _environment() -> str:
    """The code and machine a compiled function depends on, beyond its inputs."""
    package = Path(__file__).parent
    sources = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        sources.update(str(path.relative_to(package)).encode() + path.read_bytes())
    cpu = cpu_description()["flags"]
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    options = {k: getattr(v, "__qualname__", v) for k, v in OPTIONS.items()}
    return "\n".join([sources.hexdigest(), torch.__version__, numpy.__version__,
                      optree.__version__, sys.version, platform.machine(), cpu, repr(gpus),
                      repr(options)])


def signature(args) -> tuple:
    """What a compiled function is specialised to: the pytree structure of ``args`` and each
    tensor leaf's shape, dtype and device (non-tensor leaves by value)."""
    return _flatten(args)[1]


def _flatten(args) -> tuple:
    """``(leaves, signature(args))``, in one optree pass (a third of torch pytree's cost)."""
    leaves, spec = optree.tree_flatten(args)
    return leaves, (spec, tuple((x.shape, x.dtype, x.device) if isinstance(x, torch.Tensor)
                                else x for x in leaves))


def _contiguous(flat):
    """``args`` (flattened by ``_flatten``) rebuilt with every tensor contiguous: a stored
    function is compiled for contiguous inputs and does not check strides itself."""
    leaves, (spec, _) = flat
    return optree.tree_unflatten(spec, [x.contiguous() if isinstance(x, torch.Tensor) else x
                                        for x in leaves])


def _with_static(tree, static):
    """``tree`` (a state, or a tuple holding states) with each state's ``static`` replaced."""
    if isinstance(tree, SACState):
        return tree.replace(static=static)
    if type(tree) is tuple:
        return tuple(_with_static(x, static) for x in tree)
    return tree


def _first_static(args):
    return next((x.static for x in args if isinstance(x, SACState)), None)


def _keyed_config(config):
    """``config`` as the key holds it: initial hyperparameter values at their defaults (they do
    not enter the compiled graph) and no network factories (``_chosen_code`` has them)."""
    defaults = {f.name: f.default for f in dataclasses.fields(config)
                if f.name in INITIAL_VALUE_FIELDS}
    return dataclasses.replace(config, actor_factory=None, critic_factory=None, **defaults)


def _chosen_code(config) -> tuple:
    """The code ``config`` chooses by name or holds: its algorithm, network, encoder, policy
    family and factories."""
    return (algorithm_of(config), variant_of(config, "network"), variant_of(config, "encoder"),
            POLICIES[config.policy], config.actor_factory, config.critic_factory,
            config.encoder_factory)


def artifact_key(fn: Callable, args: tuple, name: str) -> str:
    """The store key of ``fn`` named ``name`` compiled for ``args``: a hash of ``name``, the
    fingerprint of ``fn`` and of the code each state's config chooses, ``signature(args)`` with
    each config as ``_keyed_config`` gives it, and ``_environment()``. Raises
    ``Unfingerprintable`` for code or inputs without a description that holds across
    processes."""
    states = [x for x in args if isinstance(x, SACState)]
    code = fingerprint((fn, [_chosen_code(s.config) for s in states]))
    keyed = tuple(x.replace(static=static_for(_keyed_config(x.config)))
                  if isinstance(x, SACState) else x for x in args)
    text = f"{name}\n{code}\n{signature(keyed)}"
    if " at 0x" in text:
        raise Unfingerprintable("the inputs' structure", "holds an object described by its "
                                "address, which differs between processes")
    return hashlib.sha256((_environment() + "\n" + text).encode()).hexdigest()[:32]


class StoredFunction:
    """A compiled function specialised to one input signature; checks it at each call and
    rebuilds its output, of the given ``structure``, from the leaves ``compiled`` returns.
    ``loaded`` says whether it came from the store rather than from compiling."""

    def __init__(self, compiled: Callable, structure, args: tuple, path: Path, loaded: bool):
        self.compiled, self.structure, self.path, self.loaded = compiled, structure, path, loaded
        self.expected, self.static = signature(args), _first_static(args)

    def __call__(self, *args):
        flat = _flatten(args)
        got = flat[1]
        if got != self.expected:
            raise ValueError(f"compiled function {self.path.name} was compiled for inputs "
                             f"{_differences(self.expected, got)}")
        # loading a saved function needs a tracing context without guards (torch 2.13)
        context = TracingContext(None)
        with tracing(context), context.guards_context.skip_guard_install():
            out = cxx_pytree.tree_unflatten(self.compiled(*_contiguous(flat)), self.structure)
        # the states it returns carry this run's config, not the one it was compiled under
        return out if self.static is None else _with_static(out, self.static)


def _differences(expected: tuple, got: tuple) -> str:
    if expected[0] != got[0]:
        return f"of structure {expected[0]}, got {got[0]}"
    diffs = [f"leaf {i}: expected {e}, got {g}" for i, (e, g)
             in enumerate(zip(expected[1], got[1])) if e != g]
    return "; ".join(diffs[:3])


def _unstored(fn: Callable, why: str) -> Callable:
    """The fallback: ``fn`` compiled the usual way, after a warning saying ``why``."""
    warnings.warn(why, stacklevel=3)
    return compile_update(fn)


def _other_torch() -> Optional[str]:
    """Why the store cannot serve this torch, or ``None`` when it is ``STORE_TORCH``."""
    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    if release == STORE_TORCH:
        return None
    return (f"funcsac's compile store is written for torch {STORE_TORCH}, this is torch "
            f"{torch.__version__}")


def artifact_path(fn: Callable, args: tuple, name: str,
                  directory: Optional[Path] = None) -> Optional[Path]:
    """Where ``compile_stored`` keeps ``fn`` named ``name`` compiled for ``args`` in the store
    ``directory`` (default ``store_dir()``); ``None`` where the store cannot be used (another
    torch than ``STORE_TORCH``, the code or inputs cannot be fingerprinted, the store is
    refused)."""
    if _other_torch():
        return None
    try:
        return _artifact_path(fn, args, name, Path(directory or store_dir()))[0]
    except (Unfingerprintable, OSError):
        return None


def _artifact_path(fn: Callable, args: tuple, name: str, directory: Path):
    """``(path, store key)``; raises ``Unfingerprintable`` or ``OSError`` (``UnsafeStore``)."""
    path = directory / f"{name}-{artifact_key(fn, args, name)}.pt2"
    return path, store_key(directory)


def compile_stored(fn: Callable, args: tuple, name: str,
                   directory: Optional[Path] = None) -> Callable:
    """``fn`` compiled (``fullgraph``) for calls shaped like ``fn(*args)``: loaded from the store
    ``directory`` (default ``store_dir()``) when an equal key was compiled before, else compiled
    ahead of time and saved there. Falls back to ``torch.compile(fn, fullgraph=True)``, with a
    warning, where the store cannot be used (see the module's docstring)."""
    other = _other_torch()
    if other:
        return _unstored(fn, f"{name}: {other}; compiled with torch.compile (inductor's own "
                             "cache) instead, not stored")
    directory = Path(directory or store_dir())
    try:
        path, key = _artifact_path(fn, args, name, directory)
    except (Unfingerprintable, OSError) as e:
        return _unstored(fn, f"{name} compiled without the store: {e}")
    stored = _load(path, key)
    if stored is not None:
        return StoredFunction(*stored, args, path, loaded=True)
    args = _contiguous(_flatten(args))
    # a new folder for each compile: a compile elsewhere never overwrites a library in use
    build = Path(tempfile.mkdtemp(dir=directory, prefix=f".{path.stem}-"))
    try:
        compiled, structure = _compile_ahead(fn, args, build)
    except Exception as e:
        shutil.rmtree(build, ignore_errors=True)
        return _unstored(fn, f"{name} cannot be compiled ahead of time ({type(e).__name__}: "
                         f"{e}); compiled with torch.compile instead, not stored")
    try:
        _save(path, key, compiled, structure, build)
    except OSError as e:
        warnings.warn(f"compiled {name} could not be saved to {path} ({e})", stacklevel=2)
    else:
        try:
            prune_store(directory, keep=path)
        except OSError as e:  # another process pruning at the same time, say
            warnings.warn(f"compile store {directory} not pruned ({e})", stacklevel=2)
    return StoredFunction(compiled, structure, args, path, loaded=False)
