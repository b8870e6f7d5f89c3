"""Compiled functions kept on disk: a new process loads what an earlier one compiled for the same
code, inputs and machine (about a second) instead of compiling again (tens of seconds).

``compile_stored(fn, args, name)`` compiles ``fn`` ahead of time with AOTInductor for the exact
pytree structure, shapes, dtypes and devices of ``args`` and saves it under a key made of ``name``,
that structure, funcsac's own source files, the torch and Python versions and the machine (CPU
flags, GPU model). The saved function has no guards: each call checks that its inputs still have
the structure, shapes, dtypes and devices it was compiled for and raises ``ValueError`` if not.
``name`` stands for ``fn``'s code: give a new name when you change code outside funcsac.

The key leaves out the config fields that only give the initial values of the state's dynamic
hyperparameters (``INITIAL_VALUE_FIELDS``): runs that differ only in those share one compiled
function, so a stored function must read them from ``state.hparams``, never from the config, as
funcsac's own functions do.

The store is ``$FUNCSAC_COMPILE_STORE``, else ``funcsac/`` in torch inductor's cache folder
(``TORCHINDUCTOR_CACHE_DIR``), so clearing that cache clears both.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Callable, Optional

import optree
import torch
from torch._guards import TracingContext, tracing

from .compile import compile_update
from .config import INITIAL_VALUE_FIELDS
from .state import SACState, static_for

STORE_ENV = "FUNCSAC_COMPILE_STORE"
# CPU kernels are written as scalar loops (g++ vectorises them) and the wrapper is built without
# optimisation or precompiled headers: a third of the compile time, and the same update time,
# since the matrix products, not these loops, dominate an update
OPTIONS = {"use_aoti": True, "guard_filter_fn": torch.compiler.skip_all_guards_unsafe,
           "cpp.vec_isa_ok": False, "aot_inductor.precompile_headers": False,
           "aot_inductor.compile_wrapper_opt_level": "O0",
           "aot_inductor.enable_line_tables": False}


def store_dir() -> Path:
    """Where compiled functions are kept."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV])
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    return Path(cache_dir()) / "funcsac"


@functools.lru_cache(maxsize=None)
def _environment() -> str:
    """The code and machine a compiled function depends on, beyond its inputs."""
    package = Path(__file__).parent
    sources = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        sources.update(str(path.relative_to(package)).encode() + path.read_bytes())
    try:
        cpu = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("flags"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    options = {k: getattr(v, "__qualname__", v) for k, v in OPTIONS.items()}
    return "\n".join([sources.hexdigest(), torch.__version__, sys.version, platform.machine(),
                      cpu, repr(gpus), repr(options)])


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


def artifact_key(name: str, args: tuple) -> Optional[str]:
    """The store key of ``fn`` named ``name`` compiled for ``args``; ``None`` when ``args`` hold
    something whose description varies between processes (e.g. a function in a config)."""
    static = _first_static(args)
    if static is not None:  # initial hyperparameter values do not enter the compiled graph
        defaults = {f.name: f.default for f in dataclasses.fields(static.config)
                    if f.name in INITIAL_VALUE_FIELDS}
        args = _with_static(args, static_for(dataclasses.replace(static.config, **defaults)))
    text = f"{name}\n{signature(args)}"
    if " at 0x" in text:
        return None
    return hashlib.sha256((_environment() + "\n" + text).encode()).hexdigest()[:32]


class StoredFunction:
    """A compiled function specialised to one input signature; checks it at each call.
    ``loaded`` says whether it came from the store rather than from compiling."""

    def __init__(self, compiled: Callable, args: tuple, path: Path, loaded: bool):
        self.compiled, self.path, self.loaded = compiled, path, loaded
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
            out = self.compiled(*_contiguous(flat))
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


def compile_stored(fn: Callable, args: tuple, name: str,
                   directory: Optional[Path] = None) -> Callable:
    """``fn`` compiled (``fullgraph``) for calls shaped like ``fn(*args)``: loaded from the store
    when an equal key was compiled before, else compiled ahead of time and saved there. Falls back
    to ``torch.compile(fn, fullgraph=True)``, with a warning, where that is impossible."""
    key = artifact_key(name, args)
    if key is None:
        return _unstored(fn, f"{name}: its inputs cannot be described across processes (they "
                         "hold a function or an object without a stable repr); compiled without "
                         "the store")
    path = Path(directory or store_dir()) / f"{name}-{key}.pt2"
    if path.exists():
        try:
            with open(path, "rb") as f:
                return StoredFunction(torch.compiler.load_compiled_function(f), args, path,
                                      loaded=True)
        except Exception as e:  # a damaged or foreign file: compile again and replace it
            warnings.warn(f"{path} cannot be loaded ({e!r}); compiling again", stacklevel=2)
    args = _contiguous(_flatten(args))
    try:
        # static shapes whatever earlier compiles of the same code saw; a copy of the options,
        # since torch.compile pops entries from them
        compiled = torch.compile(fn, fullgraph=True, dynamic=False,
                                 options=dict(OPTIONS)).aot_compile((args, {}))
    except Exception as e:
        return _unstored(fn, f"{name} cannot be compiled ahead of time ({type(e).__name__}: "
                         f"{e}); compiled with torch.compile instead, not stored")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        compiled.save_compiled_function(str(path))
    except OSError as e:
        warnings.warn(f"compiled {name} could not be saved to {path} ({e})", stacklevel=2)
    return StoredFunction(compiled, args, path, loaded=False)
