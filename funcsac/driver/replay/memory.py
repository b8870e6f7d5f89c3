"""The memory a run's replay buffers will take when full, against the memory this process can
still have: refused when it does not fit, a warning when it takes more than half."""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import List, Optional

from .buffer import ReplayBuffer

CGROUP = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")  # this process's cgroups


def _read_int(path: Path) -> Optional[int]:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _cgroup_room() -> Optional[int]:
    """Bytes left under this process's cgroup memory limit (v2, else v1), or ``None`` where no
    limit is set or none can be read."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        if not v2 and "memory" not in controllers.split(","):
            continue
        root = CGROUP if v2 else CGROUP / "memory"
        limit, usage = (("memory.max", "memory.current") if v2 else
                        ("memory.limit_in_bytes", "memory.usage_in_bytes"))
        for folder in (root / path.lstrip("/"), root):  # the mount may show only our own group
            high, used = _read_int(folder / limit), _read_int(folder / usage)
            if high is not None and used is not None and high < 2 ** 60:
                return max(0, high - used)
    return None


def available_memory() -> Optional[int]:
    """The bytes this process can still allocate: ``MemAvailable`` of ``/proc/meminfo``, or
    less where a cgroup limit leaves less; ``None`` where neither can be read (not Linux)."""
    room = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                room.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    cgroup = _cgroup_room()
    return min(room + ([cgroup] if cgroup is not None else []), default=None)


def check_buffer_memory(buffers: List[ReplayBuffer], rows: int,
                        available: Optional[int] = None) -> None:
    """Raise ``ValueError`` when ``buffers``, each holding the ``rows`` a run can add to it (at
    most its ``slots``), would take more memory than ``available`` (default:
    ``available_memory()``); warn once when they would take more than half of it. The message
    names their capacity (``buffer_size``) and a value whose buffers take at most half."""
    available = available_memory() if available is None else available
    if not buffers or available is None:
        return
    buffer_size = buffers[0].capacity
    per_row = sum(b.row_bytes for b in buffers)  # one row in every agent's buffer
    need = sum(min(rows, b.slots) * b.row_bytes for b in buffers)
    what = (f"the replay buffers of {len(buffers)} agent(s) take {per_row:,} bytes a "
            f"transition, {need / 2 ** 30:.2f} GiB when they hold the {min(rows, buffer_size):,} "
            f"transitions this run can add")
    fits = max(1, available // 2 // per_row)
    if need > available:
        raise ValueError(f"TrainConfig.buffer_size {buffer_size:,}: {what}, more than the "
                         f"{available / 2 ** 30:.2f} GiB of memory available to this process; "
                         f"a buffer_size of at most {fits:,} fits in half of it")
    if need > available / 2:
        warnings.warn(f"TrainConfig.buffer_size {buffer_size:,}: {what}, more than half of the "
                      f"{available / 2 ** 30:.2f} GiB of memory available to this process "
                      f"(at most {fits:,} stays under half)", stacklevel=3)
