"""The ``funcsac`` command's threads on a shared CPU: the cores it may use less those busy with
other work, OpenMP's waiting threads put to sleep soon; what the user set is kept; ``import
funcsac`` elsewhere changes nothing."""
import os
import subprocess
import sys

import pytest

from funcsac.accel import threads


@pytest.fixture
def no_thread_settings(monkeypatch):
    for name in ("OMP_NUM_THREADS", "GOMP_SPINCOUNT", threads.ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads, "choice", None)
    return monkeypatch


def test_the_command_takes_the_cores_other_work_leaves(no_thread_settings):
    no_thread_settings.setattr(threads, "usable_cores", lambda: 2)
    no_thread_settings.setattr(threads, "busy_cores", lambda: 1)
    said = threads.prepare()
    assert os.environ["OMP_NUM_THREADS"] == "1" and os.environ["GOMP_SPINCOUNT"] == "1000"
    assert said == threads.choice and "2 cores usable, 1 busy" in said
    assert "OMP_NUM_THREADS sets them" in said
    no_thread_settings.delenv("OMP_NUM_THREADS")
    no_thread_settings.setattr(threads, "busy_cores", lambda: 5)  # never fewer than one
    threads.prepare()
    assert os.environ["OMP_NUM_THREADS"] == "1"


def test_what_the_user_set_is_kept(no_thread_settings):
    no_thread_settings.setenv("OMP_NUM_THREADS", "3")
    assert threads.prepare() == "as OMP_NUM_THREADS says" and os.environ["OMP_NUM_THREADS"] == "3"
    no_thread_settings.delenv("OMP_NUM_THREADS")
    no_thread_settings.setenv(threads.ENV, "fixed")
    threads.prepare()
    assert "OMP_NUM_THREADS" not in os.environ and "GOMP_SPINCOUNT" not in os.environ
    no_thread_settings.setenv(threads.ENV, "some")
    with pytest.raises(ValueError, match="FUNCSAC_THREADS must be auto or fixed"):
        threads.prepare()


def test_usable_cores_keep_within_affinity_and_the_cgroup_quota(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: None)
    assert threads.usable_cores() == cores
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: 1.5)  # 1.5 cores of quota: 1
    assert threads.usable_cores() == 1
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: 64.0)
    assert threads.usable_cores() == cores


def test_busy_cores_count_what_other_work_took(monkeypatch):
    affinity = sorted(os.sched_getaffinity(0))
    snapshots = iter([{c: (0, 0) for c in affinity},
                      {c: (100 if i == 0 else 10, 100) for i, c in enumerate(affinity)}])
    monkeypatch.setattr(threads, "_cpu_times", lambda: next(snapshots))
    assert threads.busy_cores(0.0) == round(1 + 0.1 * (len(affinity) - 1))


def test_import_funcsac_outside_the_command_changes_no_threads():
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "GOMP_SPINCOUNT")}
    done = subprocess.run(
        [sys.executable, "-c", "import os, funcsac; print(os.environ.get('OMP_NUM_THREADS'), "
         "os.environ.get('GOMP_SPINCOUNT'), funcsac.accel.threads.choice)"],
        env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["None", "None", "None"]
