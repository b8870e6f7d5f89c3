"""A run's memory follows its data: replay storage grows with the rows it holds, and a buffer
that cannot fit in the memory available is refused before the run starts; memory an update frees
is reused by the next instead of faulted in afresh."""
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import funcsac
from funcsac.driver.replay import memory
from funcsac.driver.replay.buffer import ReplayBuffer
from helpers import TINY

TESTS = Path(__file__).parent


def _rows(start, stop):
    t = torch.arange(start, stop, dtype=torch.float32)
    return {"obs": t[:, None].expand(-1, 3), "action": -t[:, None], "reward": t,
            "next_obs": t[:, None].expand(-1, 3) + 1, "terminated": torch.zeros(stop - start)}


def test_storage_grows_with_the_rows_and_holds_what_a_full_allocation_would():
    buffer = ReplayBuffer(3_000, (3,), 1, "cpu")
    assert len(buffer.data["reward"]) == 0
    buffer.add(_rows(0, 10))
    assert len(buffer.data["reward"]) == 1024  # the first block
    for start in range(10, 2_500, 490):
        buffer.add(_rows(start, min(start + 490, 2_500)))
    assert len(buffer.data["reward"]) == 3_000  # doubled to 2,048, then capped at the capacity
    buffer.add(_rows(2_500, 3_700))  # wraps
    assert len(buffer.data["reward"]) == 3_000
    held = buffer.rows(700, 3_700)
    torch.testing.assert_close(held["reward"], torch.arange(700, 3_700, dtype=torch.float32),
                               rtol=0, atol=0)
    full = ReplayBuffer(3_000, (3,), 1, "cpu")
    full._grow(3_000)  # allocated whole at once, as before: the same draws
    full.add(_rows(0, 3_700))
    key = funcsac.keys.make_key(0)
    for x, y in zip(buffer.sample(key, 64)[0], full.sample(key, 64)[0]):
        assert torch.equal(x, y)


def test_a_buffer_that_does_not_fit_is_refused_and_one_over_half_warned():
    buffers = [ReplayBuffer(10 ** 9, (3,), 1, "cpu") for _ in range(2)]
    per_row = 2 * buffers[0].row_bytes  # 2 x (3 + 1 + 1 + 3 + 1) float32 = 72 bytes
    assert per_row == 72
    with pytest.raises(ValueError, match=r"TrainConfig.buffer_size 1,000,000,000: .* 2 agent\(s\) "
                                         r"take 72 bytes a transition.* at most 13,888 fits"):
        memory.check_buffer_memory(buffers, 30_000, available=2_000_000)
    with pytest.warns(UserWarning, match="more than half"):
        memory.check_buffer_memory(buffers, 30_000, available=2_400_000)
    memory.check_buffer_memory(buffers, 10_000, available=2_000_000)  # 0.72 MB: quiet


@pytest.mark.parametrize("version", [1, 2])
def test_a_cgroup_limit_leaves_less_room(tmp_path, monkeypatch, version):
    """What the cgroup allows beyond what it uses (v2: memory.max less memory.current; v1:
    memory.limit_in_bytes less memory.usage_in_bytes), in this process's own group."""
    group = (tmp_path / "job") if version == 2 else (tmp_path / "memory" / "job")
    group.mkdir(parents=True)
    limit, usage = (("memory.max", "memory.current") if version == 2 else
                    ("memory.limit_in_bytes", "memory.usage_in_bytes"))
    (group / limit).write_text("3000000000\n")
    (group / usage).write_text("1000000000\n")
    (tmp_path / "self").write_text("0::/job\n" if version == 2 else "4:memory:/job\n0::/\n")
    monkeypatch.setattr(memory, "CGROUP", tmp_path)
    monkeypatch.setattr(memory, "PROC_CGROUP", tmp_path / "self")
    assert memory._cgroup_room() == 2_000_000_000
    assert memory.available_memory() <= 2_000_000_000
    (group / limit).write_text("max\n")  # no limit
    assert memory._cgroup_room() is None


def test_the_memory_available_is_read_from_the_system():
    available = memory.available_memory()
    assert available is not None and 0 < available < 2 ** 50


def test_a_run_whose_buffer_does_not_fit_stops_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 10 ** 6)
    cfg = funcsac.TrainConfig(total_steps=100_000, learning_starts=50, **TINY)
    with pytest.raises(ValueError, match="TrainConfig.buffer_size 1,000,000: .* a buffer_size of "
                                         "at most"):
        funcsac.train(cfg, tmp_path)
    assert not (tmp_path / "checkpoint.pt").exists()
    short = dataclasses.replace(cfg, total_steps=100)  # 100 rows are all this run can add
    assert funcsac.train(short, tmp_path / "short").evals


# the run's own peak: /proc's VmHWM, not ru_maxrss, which a child keeps from its parent across
# fork and exec (a test worker grown by earlier in-process runs would be counted)
RUN = """
import sys
sys.path.insert(0, {tests!r})
import funcsac, toy_envs
cfg = funcsac.TrainConfig(env_id="funcsac-test/CameraState-v0", total_steps=900, compile=False,
                          progress=False, eval_episodes=1)
funcsac.train(cfg, {run!r})
status = open("/proc/self/status").read().split("VmHWM:")[1].split()
print("peak", int(status[0]) * 1024)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status: Linux")
def test_a_dict_image_run_with_the_default_buffer_stays_small(tmp_path):
    """The run that the kernel once killed at 24 GB: a Dict of a 64x64 RGB image and a state,
    the default buffer of 1,000,000 transitions, 900 steps."""
    done = subprocess.run([sys.executable, "-c", RUN.format(tests=str(TESTS),
                                                            run=str(tmp_path / "run"))],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    peak = int(done.stdout.split("peak")[-1])
    assert peak < 2 * 2 ** 30, f"peak resident memory {peak / 2 ** 30:.2f} GiB"


# a process that allocates 64 MB in 4 MB blocks, frees them all, 8 times over (as an update frees
# its old state and temporaries and allocates new ones), and prints the page faults of the last 7
# rounds; with "reuse", after funcsac.reuse_freed_memory() (its result printed first)
_REUSE = """
import resource, sys
import numpy
import funcsac
if sys.argv[1] == "reuse":
    print(funcsac.reuse_freed_memory())
for i in range(8):
    if i == 1:
        start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [numpy.ones(2**20, dtype=numpy.float32) for _ in range(16)]
    del blocks
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc: Linux")
def test_memory_freed_is_reused_instead_of_faulted_in_again():
    """glibc as shipped gives much of the freed 64 MB back to the kernel and faults it in again
    each round (half its pages with glibc 2.36); after ``reuse_freed_memory`` the rounds reuse
    it."""
    def faults(mode):
        return subprocess.run([sys.executable, "-c", _REUSE, mode], capture_output=True,
                              text=True, check=True).stdout.split()
    applied, reused = faults("reuse")
    if applied != "True":
        pytest.skip("the C library is not glibc")
    shipped, = faults("shipped")
    pages = 7 * 64 * 2**20 // 4096  # the last 7 rounds' pages
    assert int(shipped) > pages // 4  # the control: as shipped, many pages come fresh
    assert int(reused) < pages // 100
