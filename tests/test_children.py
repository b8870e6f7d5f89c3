"""Children die with their parent: a run killed with SIGKILL leaves no process behind."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _children(pid: int) -> list:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Running, and not a zombie left for a reaper (a container's init may not reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(what, timeout_s: float, every_s: float = 0.1):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        found = what()
        if found:
            return found
        time.sleep(every_s)
    return None


def _kill_parent_and_time_child(parent: subprocess.Popen, child: int) -> float:
    start = time.monotonic()
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    _wait_for(lambda: not _alive(child), 15.0)
    return time.monotonic() - start


SLEEPER = ("from funcsac.platform.children import watch_parent; watch_parent(0.2); "
           "import time; time.sleep(120)")
PARENT = """
import sys, time
from funcsac.platform import children
if {watcher_only}:
    children._prctl = lambda: None  # as on a system without PR_SET_PDEATHSIG
children.start_child([sys.executable, "-c", {sleeper!r}])
time.sleep(120)
"""


@pytest.mark.parametrize("watcher_only", [False, True])
def test_a_child_ends_within_seconds_of_its_parents_sigkill(watcher_only):
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(
        watcher_only=watcher_only, sleeper=SLEEPER)])
    try:
        child = _wait_for(lambda: _children(parent.pid), 60.0)
        assert child, "the parent started no child"
        _wait_for(lambda: "watch_parent" in _cmdline(child[0]), 30.0)
        time.sleep(1.0 if watcher_only else 0.0)  # the child's watcher set up
        assert _kill_parent_and_time_child(parent, child[0]) < 10.0
        assert not _alive(child[0])
    finally:
        parent.kill()


TRAIN = """
import funcsac
cfg = funcsac.TrainConfig(env_id="Pendulum-v1", total_steps=1_000_000, learning_starts=100,
                          hidden_sizes=(64, 64), batch_size=32, progress=False, eval_every=0,
                          checkpoint_every=0)
funcsac.train(cfg, {run!r})
"""


def test_the_background_compile_ends_with_its_killed_run(tmp_path):
    """SIGKILL a run while its child compiles the update: the child is gone within 10 s and
    the store holds no half-written function."""
    store = tmp_path / "store"
    parent = subprocess.Popen([sys.executable, "-c", TRAIN.format(run=str(tmp_path / "run"))],
                              env={**os.environ, "FUNCSAC_COMPILE_STORE": str(store)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        child = _wait_for(lambda: [c for c in _children(parent.pid)
                                   if "funcsac.driver.run.compiled_step" in _cmdline(c)], 120.0)
        assert child, "the run started no background compile"
        time.sleep(3.0)  # into the compile
        assert _alive(child[0])
        assert _kill_parent_and_time_child(parent, child[0]) < 10.0
        assert not _alive(child[0])
    finally:
        parent.kill()
    assert not list(store.glob("*.pt2"))

