"""Compiled functions kept on disk: a new process loads what an earlier one compiled for the same
code, inputs and machine (about two seconds) instead of compiling again (tens of seconds).

``compile_stored(fn, args, name)`` compiles ``fn`` ahead of time with AOTInductor for the exact
pytree structure, shapes, dtypes and devices of ``args`` and saves it under a key made of
``name``, that structure (the configs' static fields included), what ``fn`` computes and the code
each state's config chooses (``funcsac.accel.compile.fingerprint`` of ``fn``, of the algorithm's
record (``funcsac.registry.algorithm_of``: its losses and settings), of the policy family and of the
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

The store is a private folder of signed files (``funcsac.accel.compile.store``).

Where the store cannot be used (a torch other than the release it is written for,
``STORE_TORCH``; ``fn`` or the code its inputs choose cannot be fingerprinted; the store is
refused; AOTInductor fails), ``fn`` is compiled with ``torch.compile``, after a one-line warning.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import platform
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Optional

import numpy
import optree
import torch
import torch.utils._cxx_pytree as cxx_pytree  # optree's speed, and dynamo traces it
from torch._guards import TracingContext, tracing

from ...config import INITIAL_VALUE_FIELDS
from ...platform.cpu import cpu_description
from ...registry import POLICIES, algorithm_of, variant_of
from ...state import SACState, static_for
from .arguments import (_as_compiled, _first_static, _flatten, _leaves_of, _output_structure,
                        _with_static, signature)
from .compiling import compile_update
from .fingerprint import Unfingerprintable, fingerprint
from .store import _load, _save, prune_store, store_dir, store_key

# the wrapper (the C++ that calls the kernels) is built without optimisation or precompiled
# headers: seconds less to compile, the same update time. The kernels stay vectorised (scalar
# loops left to g++ compile faster but run slower: bench/results/ANALYSIS.md)
# the torch release whose ahead-of-time compile and loading (private parts included) the store
# is written for; under another, functions are compiled with torch.compile (inductor's own cache)
STORE_TORCH = "2.13"
OPTIONS = {"use_aoti": True,
           "guard_filter_fn": getattr(torch.compiler, "skip_all_guards_unsafe", None),
           "aot_inductor.precompile_headers": False,
           "aot_inductor.compile_wrapper_opt_level": "O0",
           "aot_inductor.enable_line_tables": False}


def _compile_ahead(fn: Callable, args: tuple, build: Path):
    """``(compiled, structure)``: ``fn`` compiled ahead of time for ``args`` to take them as
    ``_as_compiled`` gives them and return its output's leaves, its shared library built in the
    folder ``build``, which the compiled function records, and its output's structure
    (``_output_structure``)."""
    # static shapes whatever earlier compiles of the same code saw; a copy of the options, since
    # torch.compile pops entries from them
    options = {**OPTIONS, "aot_inductor.output_path": str(build)}
    compiled = torch.compile(_leaves_of(fn, args), fullgraph=True, dynamic=False,
                             options=options).aot_compile((_as_compiled(_flatten(args)), {}))
    return compiled, _output_structure(fn, args)


@functools.lru_cache(maxsize=None)
def _environment() -> str:
    """The code and machine a compiled function depends on, beyond its inputs."""
    package = Path(__file__).parent.parent  # funcsac's sources
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


def _keyed_config(config):
    """``config`` as the key holds it: initial hyperparameter values at their defaults (they do
    not enter the compiled graph) and no network factories (``_chosen_code`` has them)."""
    defaults = {f.name: f.default for f in dataclasses.fields(config)
                if f.name in INITIAL_VALUE_FIELDS}
    return dataclasses.replace(config, actor_factory=None, critic_factory=None,
                               encoder_factory=None, **defaults)


def _chosen_code(config) -> tuple:
    """The code ``config`` chooses by name or holds: its algorithm, network, encoder, policy
    family and factories."""
    return (algorithm_of(config), variant_of(config, "network"), variant_of(config, "encoder"),
            POLICIES[config.policy], config.actor_factory, config.critic_factory,
            config.encoder_factory)


def kernel_threads() -> int:
    """The threads inductor specialises a compile's CPU kernels for (its parallel loops run on
    exactly that many): its ``cpp.threads`` where set, else torch's thread count now."""
    import torch._inductor.config as inductor

    return inductor.cpp.threads if inductor.cpp.threads > 0 else torch.get_num_threads()


def artifact_key(fn: Callable, args: tuple, name: str) -> str:
    """The store key of ``fn`` named ``name`` compiled for ``args``: a hash of ``name``, the
    fingerprint of ``fn`` and of the code each state's config chooses, ``signature(args)`` with
    each config as ``_keyed_config`` gives it, ``kernel_threads()`` and ``_environment()``. Raises
    ``Unfingerprintable`` for code or inputs without a description that holds across
    processes."""
    states = [x for x in args if isinstance(x, SACState)]
    code = fingerprint((fn, [_chosen_code(s.config) for s in states]))
    keyed = tuple(x.replace(static=static_for(_keyed_config(x.config)))
                  if isinstance(x, SACState) else x for x in args)
    text = f"{name}\n{code}\n{signature(keyed)}\nthreads {kernel_threads()}"
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
            out = cxx_pytree.tree_unflatten(self.compiled(*_as_compiled(flat)), self.structure)
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

