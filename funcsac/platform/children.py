"""Processes funcsac starts (a background compile, MKL's measurement), which end when the
process that started them ends, whatever ends it (SIGKILL included): on Linux the kernel kills
such a child when the thread that started it dies (``PR_SET_PDEATHSIG``), and each child also
watches its parent's PID (``watch_parent``: other systems, and a parent gone before the child set
up its signal). Torch-free."""
from __future__ import annotations

import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
import time

PARENT_ENV = "FUNCSAC_PARENT_PID"
PR_SET_PDEATHSIG = 1


@functools.lru_cache(maxsize=None)
def _prctl():
    """libc's ``prctl``, looked up in the parent (a forked child only calls it), or ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with(parent: int, prctl) -> None:
    """In the forked child, before it runs its program: SIGKILL when the parent's thread dies;
    gone at once if the parent already is."""
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def start_child(args: list, env=None, **popen_kwargs) -> subprocess.Popen:
    """``subprocess.Popen(args, ...)`` of a child that dies with this process (and with the
    thread that calls this), its parent's PID in ``$FUNCSAC_PARENT_PID`` for ``watch_parent``."""
    parent = os.getpid()
    env = {**(os.environ if env is None else env), PARENT_ENV: str(parent)}
    return subprocess.Popen(args, env=env, preexec_fn=functools.partial(_die_with, parent,
                                                                        _prctl()),
                            **popen_kwargs)


def watch_parent(interval_s: float = 1.0) -> None:
    """In a child that ``start_child`` started: a daemon thread that kills this process once its
    parent is gone (checked every ``interval_s`` seconds). Does nothing in other processes."""
    parent = int(os.environ.get(PARENT_ENV) or 0)
    if not parent:
        return

    def watch():
        while os.getppid() == parent:
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="funcsac-watch-parent", daemon=True).start()
