"""The ``funcsac`` command's threads on a shared CPU, chosen before torch loads.

torch starts one intra-op thread per core, and OpenMP's threads spin while they wait for the
others; two processes that each want every core keep stopping each other (two Pendulum-v1 runs
on 2 cores: each at 0.21 of one alone, ``bench/results/RESULTS.md``). ``prepare()`` therefore,
in the
``funcsac`` command (``funcsac ...``, ``python -m funcsac ...``) and unless
``FUNCSAC_THREADS=fixed`` or the user set them:

- sets ``OMP_NUM_THREADS`` to the cores this process may use (its CPU affinity, within its
  cgroup's CPU quota) less those busy with other work over a short sample of ``/proc/stat``,
  at least one;
- sets ``GOMP_SPINCOUNT`` to 1,000, so a waiting thread sleeps soon instead of spinning.

``choice`` says what it chose, for the run's opening line. ``import funcsac`` in a script or a
notebook leaves torch's threads as they are.
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import Optional

ENV = "FUNCSAC_THREADS"  # "auto" (the command's default) or "fixed": torch's and OpenMP's own
SPIN_COUNT = "1000"  # OpenMP's waits before a thread sleeps (libgomp's default: 300,000)
SAMPLE_S = 0.2

choice: Optional[str] = None  # what prepare() chose, said in the run's opening line


def is_command() -> bool:
    """Whether this process is the ``funcsac`` command."""
    argv = getattr(sys, "orig_argv", sys.argv)
    return Path(sys.argv[0]).name == "funcsac" or any(
        a == "-m" and b == "funcsac" for a, b in zip(argv, argv[1:]))


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, within its cgroup's CPU quota
    (cgroup v2's ``cpu.max`` or v1's ``cpu.cfs_quota_us``), at least one."""
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    quota = _cgroup_quota()
    return max(1, min(cores, math.floor(quota)) if quota else cores)


def _cgroup_quota() -> Optional[float]:
    """The cgroup's CPU quota in cores, or ``None`` where there is none."""
    try:
        text = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if text[0] != "max":
            return int(text[0]) / int(text[1])
    except (OSError, IndexError, ValueError):
        pass
    try:
        quota = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
        period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 else None
    except (OSError, ValueError):
        return None


def _cpu_times() -> dict:
    """Per core, ``(busy, total)`` jiffies since boot (``/proc/stat``)."""
    times = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit():
            values = [int(x) for x in fields[:8]]
            idle = values[3] + values[4]  # idle and iowait
            times[int(name[3:])] = (sum(values) - idle, sum(values))
    return times


def busy_cores(seconds: float = SAMPLE_S) -> int:
    """How many of this process's cores other work kept busy over ``seconds`` (rounded), this
    process idle meanwhile; 0 where ``/proc/stat`` cannot be read."""
    try:
        cores = os.sched_getaffinity(0)
        before = _cpu_times()
        time.sleep(seconds)
        after = _cpu_times()
    except (OSError, AttributeError, ValueError):
        return 0
    load = sum((after[c][0] - before[c][0]) / max(after[c][1] - before[c][1], 1)
               for c in cores if c in before and c in after)
    return round(load)


def prepare() -> Optional[str]:
    """Choose the command's threads (see the module's docstring) before torch loads; returns
    and keeps in ``choice`` a phrase saying what was chosen and how to set it."""
    global choice
    setting = os.environ.get(ENV, "auto")
    if setting not in ("auto", "fixed"):
        raise ValueError(f"{ENV} must be auto or fixed, got {setting!r}")
    if setting == "fixed" or "OMP_NUM_THREADS" in os.environ:
        choice = ("as OMP_NUM_THREADS says" if "OMP_NUM_THREADS" in os.environ
                  else f"torch's own ({ENV}=fixed)")
        return choice
    usable, busy = usable_cores(), busy_cores()
    threads = max(1, usable - busy)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
    others = f"{busy} busy with other work" if busy else "none busy"
    choice = (f"chosen: {usable} core{'s' * (usable > 1)} usable, {others}; OMP_NUM_THREADS "
              "sets them")
    return choice
