"""Freed memory kept for reuse by the C library's allocator.

Every call of an update allocates its new state and its temporaries afresh (hundreds of MB at the
wide presets' sizes) and frees the old ones. glibc's ``malloc`` serves a block above its mmap
threshold (128 KiB, raised as large blocks are freed) with pages fresh from the kernel, and gives
the top of its heap back once more than twice that lies free there, so a wide update can fault in
and zero every page it allocates on every call; how often depends on the process's history
(what that costs a wide preset's step: ``bench/studies/memory_reuse.py``,
``bench/results/ANALYSIS.md``).
PyTorch's CPU tuning guide advises an allocator that reuses memory (jemalloc, tcmalloc) for the
same reason; ``reuse_freed_memory`` gets that from glibc itself.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt's parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 2**20  # glibc's largest: blocks up to 32 MiB come from the heap
TRIM_THRESHOLD = 2**30  # the heap's top given back to the kernel only beyond 1 GiB free


def reuse_freed_memory() -> bool:
    """Make glibc's ``malloc`` serve blocks up to 32 MiB from its heap and keep up to 1 GiB free
    at the heap's top for reuse, instead of mapping fresh pages on each call of an update; for the
    rest of the process. True where it applied (Linux with glibc), False elsewhere (nothing
    changed). A process keeps the memory its largest step needed, as with jemalloc or tcmalloc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # another C library (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and
                mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
