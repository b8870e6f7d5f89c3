"""MKL's own kernels for the CPU on AMD processors, chosen by a measurement.

torch's CPU build multiplies matrices with Intel's MKL, which picks its kernels by asking whether
the CPU is Intel's (``mkl_serv_intel_cpu_true``); on an AMD CPU it answers no and runs a generic
path, whatever the CPU's instruction set. A shared library of two functions answering yes, loaded
with global symbols before torch, makes MKL run the kernels of the CPU's instruction set (what
that gained: ``bench/results/ANALYSIS.md``).

``import funcsac`` does none of this by itself: ``prepare()`` runs before torch is imported
only in the ``funcsac`` command (``funcsac ...``, ``python -m funcsac ...``) and where
``FUNCSAC_MKL_VENDOR_CHECK`` is set (a script or notebook opts in with
``FUNCSAC_MKL_VENDOR_CHECK=auto``, in its environment or in ``os.environ`` before
``import funcsac``). It loads the library when

- ``FUNCSAC_MKL_VENDOR_CHECK`` is ``answered``, or ``auto`` (the command's default) and the
  verdict kept for this machine says so, or no verdict is kept and a measurement chooses it: on an
  x86-64 Linux AMD CPU, two child processes multiply matrices of a SAC update's shapes, one as
  shipped and one answered; the answered path is kept when its products equal the shipped ones'
  to rounding and take at most 0.9 of their time. The verdict is kept per CPU model, instruction
  set and torch version in ``funcsac/mkl.json`` in the user's cache folder, so it is measured
  once (about 5 s) and a machine's processes all agree; a kept "no" builds nothing;
- torch is not imported yet (after it, MKL has chosen) and a C compiler (``cc``) builds the
  library, from the source below, into a new private folder, for this process only.

The choice made goes into the environment (``answered`` or ``shipped``), so that child processes
(a background compile, a tool's subprocess) make the same one, and the command says it in one
line on stderr when it answers.

``shipped`` leaves MKL as it is. The choice changes rounding only, never what is computed; it is
recorded with a run's numerics (``funcsac.platform.numerics.numerics``), as a resumed run is
bitwise the same only on the same kernels. Undocumented MKL internals: nothing depends on it for
correctness, and anything unexpected leaves MKL as shipped.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from ..platform.children import start_child
from ..platform.cpu import cpu_description, flags_digest
from .threads import is_command
from ..platform.files import cache_folder, write_atomically

ENV = "FUNCSAC_MKL_VENDOR_CHECK"
CHOICES = ("auto", "answered", "shipped")
SOURCE = ("int mkl_serv_intel_cpu_true(void) { return 1; }\n"
          "int mkl_serv_intel_cpu(void) { return 1; }\n")
KEEP_BELOW = 0.9  # the answered path's time over the shipped one's that keeps it

answered = False  # whether this process loaded the library (read by funcsac.platform.numerics)

# a child's measurement: products of a SAC update's shapes (hidden layers, a small-K input
# layer, a narrow head, a pair of critics) timed, best of 7, and their largest error against
# numpy's float64 products (OpenBLAS, which the library does not touch)
PROBE = r"""
import ctypes, json, sys, time
if sys.argv[1]:
    ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
import torch
g = torch.Generator().manual_seed(0)
pairs = [(torch.randn(m, k, generator=g), torch.randn(k, n, generator=g))
         for m, k, n in [(256, 256, 256), (256, 23, 256), (256, 256, 12)]]
pairs.append((torch.randn(2, 256, 256, generator=g), torch.randn(2, 256, 256, generator=g)))
error = max(float(abs(torch.matmul(a, b).double().numpy()
                      - a.double().numpy() @ b.double().numpy()).max()) for a, b in pairs)
best = float("inf")
for _ in range(7):
    start = time.perf_counter()
    for _ in range(20):
        for a, b in pairs:
            torch.matmul(a, b)
    best = min(best, time.perf_counter() - start)
print(json.dumps({"seconds": best, "error": error}))
"""


def identity() -> dict:
    """What a kept verdict holds for: the CPU (vendor, model, flags) and the torch and Python
    versions."""
    cpu = cpu_description()
    return {"vendor": cpu["vendor"], "model": cpu["model"], "flags": flags_digest(),
            "torch": _torch_version(), "python": sys.version.split()[0]}


def _torch_version() -> Optional[str]:
    try:
        from importlib.metadata import version
        return version("torch")
    except Exception:
        return None


def _verdict_path() -> Path:
    return cache_folder("mkl.json")


def _build(folder: str) -> Optional[str]:
    """The library compiled into ``folder`` (its path), or None without a working compiler."""
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None
    path = os.path.join(folder, "libmkl_answer.so")
    try:
        subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-x", "c", "-", "-o", path],
                       input=SOURCE.encode(), check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return path


def _probe(library: str) -> Optional[dict]:
    """A child's measurement (``PROBE``), with the library or without (``""``); the child dies
    with this process."""
    env = {**os.environ, ENV: "shipped"}
    try:
        child = start_child([sys.executable, "-c", PROBE, library], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            out, _ = child.communicate(timeout=300)
        finally:
            child.kill()
        if child.returncode != 0:
            return None
        return json.loads(out.decode().strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def measure(library: str) -> dict:
    """The verdict of one measurement: shipped and answered seconds, the answered products'
    largest error, and ``answered`` (keep the library): its products within float32 rounding of
    sums of 256 standard normal products (1e-3) and its time at most ``KEEP_BELOW`` of the
    shipped one's."""
    shipped, answer = _probe(""), _probe(library)
    if shipped is None or answer is None:
        return {"answered": False, "why": "a measurement failed"}
    ratio = answer["seconds"] / shipped["seconds"]
    return {"answered": answer["error"] <= 1e-3 and ratio <= KEEP_BELOW,
            "ratio": round(ratio, 3), "error": answer["error"],
            "shipped_s": shipped["seconds"], "answered_s": answer["seconds"]}


def kept_verdict(machine: dict) -> Optional[dict]:
    """The verdict kept in the cache folder for ``machine`` (``identity()``), or ``None``."""
    try:
        saved = json.loads(_verdict_path().read_text())
        if saved.get("identity") == machine:
            return saved["verdict"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    return None


def _measured(machine: dict, library: str) -> dict:
    """A new verdict for ``machine``, written to the cache folder (whole, by a rename)."""
    path = _verdict_path()
    verdict = measure(library)
    text = json.dumps({"identity": machine, "verdict": verdict}).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, lambda f: f.write(text))
    except OSError:  # not kept: measured again next time
        pass
    return verdict


def requested() -> bool:
    """Whether this process chooses MKL's kernels as it starts (``import funcsac``): it is the
    ``funcsac`` command, or ``FUNCSAC_MKL_VENDOR_CHECK`` is set."""
    return is_command() or ENV in os.environ


def prepare() -> bool:
    """Load the library when the setting (``ENV``, ``auto`` where unset) and the machine call for
    it (see the module's docstring); returns whether this process runs MKL answered, and says so
    on stderr when it newly does. Anything unexpected leaves MKL as shipped."""
    global answered
    choice = os.environ.get(ENV, "auto")
    if choice not in CHOICES:
        raise ValueError(f"{ENV} must be one of {', '.join(CHOICES)}, got {choice!r}")
    if (answered or choice == "shipped" or platform.system() != "Linux"
            or platform.machine() != "x86_64"
            or cpu_description()["vendor"] != "AuthenticAMD"):
        return answered
    if "torch" not in sys.modules:  # else MKL is bound already: child processes do as this one
        try:
            answered = _load(choice)
        except Exception:
            answered = False
        if answered and os.environ.get(ENV) != "answered":  # a child of such a process: quiet
            print(f"funcsac: MKL runs the kernels of this AMD CPU's instruction set (faster "
                  f"here, measured once); {ENV}=shipped turns this off", file=sys.stderr)
    # child processes (a background compile, a tool's subprocess) make the same choice
    os.environ[ENV] = "answered" if answered else "shipped"
    return answered


def _load(choice: str) -> bool:
    """Load the library if ``choice`` is ``answered`` or the verdict for this machine says so
    (measured first where none is kept; nothing is built where a kept verdict says no); whether
    it was loaded."""
    import ctypes
    machine = identity()
    verdict = kept_verdict(machine) if choice == "auto" else None
    if verdict is not None and not verdict.get("answered"):
        return False
    folder = tempfile.mkdtemp(prefix="funcsac-mkl-")  # mode 0700: only this user writes it
    try:
        library = _build(folder)
        if library is None:
            return False
        if choice == "auto" and verdict is None and \
                not _measured(machine, library).get("answered"):
            return False
        ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
        return True
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the loaded library stays mapped
