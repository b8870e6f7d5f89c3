"""What CPU this is, from ``/proc/cpuinfo``, without importing torch (``funcsac.accel.blas``
reads it before torch loads)."""
from __future__ import annotations

import functools
import hashlib
import platform
from pathlib import Path
from typing import Dict


@functools.lru_cache(maxsize=None)
def cpu_description() -> Dict[str, str]:
    """The CPU's vendor, model name and instruction-set flags (``/proc/cpuinfo``; elsewhere
    ``platform.processor()`` and ``platform.machine()``, no vendor)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    field = lambda name: next((line.split(":", 1)[1].strip() for line in lines  # noqa: E731
                               if line.startswith(name)), "")
    return {"vendor": field("vendor_id"), "model": field("model name") or platform.processor(),
            "flags": field("flags") or platform.machine()}


def flags_digest() -> str:
    """A short digest of the CPU's flags (16 hex digits), naming its instruction set."""
    return hashlib.sha256(cpu_description()["flags"].encode()).hexdigest()[:16]
