"""MKL answered on AMD CPUs (``funcsac.accel.blas``): chosen before torch is imported by the
funcsac command or an opt-in (never by a plain ``import funcsac``), by the setting or a measurement
kept per machine, passed on to child processes, recorded with the numerics, and left alone wherever
anything is unexpected."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from funcsac.accel import blas
from funcsac.platform.cpu import cpu_description

# MKL answers differently only on AMD CPUs, and the library needs a C compiler
ON_AMD = cpu_description()["vendor"] == "AuthenticAMD"
AMD = ON_AMD and bool(shutil.which("cc") or shutil.which("gcc"))

# prints: whether MKL is answered, the setting passed on, numerics' entry, a product's error
CHILD = r"""
import json, os, sys
{before}
import funcsac, torch
from funcsac.platform.numerics import numerics
a, b = torch.randn(256, 23, dtype=torch.float64), torch.randn(23, 256, dtype=torch.float64)
error = float((a.float() @ b.float() - a @ b).abs().max())
print(json.dumps([funcsac.accel.blas.answered, os.environ.get("FUNCSAC_MKL_VENDOR_CHECK"),
                  numerics("cpu")["mkl"], error]))
"""


def _child(tmp_path, setting=None, before=""):
    env = {k: v for k, v in os.environ.items() if k != blas.ENV}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    if setting is not None:
        env[blas.ENV] = setting
    done = subprocess.run([sys.executable, "-c", CHILD.format(before=before)], env=env,
                          capture_output=True, text=True, timeout=300)
    return done


def _verdict(tmp_path, answered):
    identity = blas.identity()
    path = tmp_path / "funcsac" / "mkl.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"identity": identity, "verdict": {"answered": answered}}))


def test_shipped_leaves_mkl_alone_and_children_inherit_it(tmp_path):
    done = _child(tmp_path, "shipped")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])[:3] == [False, "shipped", "shipped"]
    assert not (tmp_path / "funcsac" / "mkl.json").exists()  # nothing measured


def test_an_unknown_setting_is_refused_by_name(tmp_path):
    done = _child(tmp_path, "fast")
    assert done.returncode != 0
    assert "FUNCSAC_MKL_VENDOR_CHECK must be one of auto, answered, shipped, got 'fast'" in \
        done.stderr


def test_torch_imported_first_leaves_mkl_alone(tmp_path):
    done = _child(tmp_path, "answered", before="import torch")
    assert done.returncode == 0, done.stderr
    expected = [False, "shipped" if ON_AMD else "answered", "shipped"]
    assert json.loads(done.stdout.splitlines()[-1])[:3] == expected


@pytest.mark.skipif(not AMD, reason="needs an AMD CPU and a C compiler")
@pytest.mark.parametrize("answered", [False, True])
def test_auto_follows_the_kept_verdict_without_measuring(tmp_path, answered):
    _verdict(tmp_path, answered)
    done = _child(tmp_path, "auto")
    assert done.returncode == 0, done.stderr
    got, setting, recorded, error = json.loads(done.stdout.splitlines()[-1])
    label = "answered" if answered else "shipped"
    assert (got, setting, recorded) == (answered, label, label)
    assert error < 1e-3  # products as right as the shipped kernels'


@pytest.mark.skipif(not AMD, reason="needs an AMD CPU and a C compiler")
def test_measure_times_and_checks_both_paths(tmp_path):
    library = blas._build(str(tmp_path))
    if library is None:
        pytest.skip("no C compiler")
    verdict = blas.measure(library)
    assert verdict["shipped_s"] > 0 and verdict["answered_s"] > 0
    assert verdict["error"] < 1e-3
    assert verdict["answered"] == (verdict["ratio"] <= blas.KEEP_BELOW)


def test_other_cpus_are_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(blas, "cpu_description", lambda: {"vendor": "GenuineIntel"})
    monkeypatch.delitem(sys.modules, "torch")  # as if torch were not imported yet
    monkeypatch.setattr(blas, "_build", lambda folder: pytest.fail("built on an Intel CPU"))
    assert blas.prepare() is blas.answered


def test_anything_unexpected_leaves_mkl_as_shipped(monkeypatch):
    def broken(folder):
        raise RuntimeError("no compiler today")
    monkeypatch.setattr(blas, "cpu_description", lambda: {"vendor": "AuthenticAMD"})
    monkeypatch.setattr(blas.platform, "system", lambda: "Linux")
    monkeypatch.setattr(blas.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(blas, "answered", False)
    monkeypatch.setattr(blas, "_build", broken)
    monkeypatch.setenv(blas.ENV, "answered")
    monkeypatch.delitem(sys.modules, "torch")  # as if torch were not imported yet
    assert blas.prepare() is False
    assert os.environ[blas.ENV] == "shipped"


PLAIN = r"""
import json, os, subprocess, ctypes
started, loaded, before = [], [], dict(os.environ)
real_popen, real_cdll = subprocess.Popen.__init__, ctypes.CDLL.__init__
subprocess.Popen.__init__ = lambda self, *a, **k: started.append(a) or real_popen(self, *a, **k)
ctypes.CDLL.__init__ = (lambda self, name, *a, **k: loaded.append(name)
                        or real_cdll(self, name, *a, **k))
import funcsac
print(json.dumps([started, [n for n in loaded if n and "mkl" in str(n)],
                  dict(os.environ) == before, funcsac.accel.blas.answered]))
"""


def test_a_plain_import_starts_nothing_builds_nothing_and_changes_no_setting(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != blas.ENV}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", PLAIN], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [[], [], True, False]
    assert not (tmp_path / "funcsac").exists()  # nothing measured or kept


def test_the_command_and_an_opt_in_request_the_choice(monkeypatch):
    monkeypatch.delenv(blas.ENV, raising=False)
    for argv, orig, wanted in ((["/venv/bin/funcsac", "train"], None, True),
                               (["-m"], ["python", "-m", "funcsac", "train"], True),
                               (["script.py"], ["python", "script.py"], False),
                               (["-c"], ["python", "-c", "import funcsac"], False)):
        monkeypatch.setattr(sys, "argv", argv)
        monkeypatch.setattr(sys, "orig_argv", orig or ["python", *argv])
        assert blas.requested() is wanted
    monkeypatch.setenv(blas.ENV, "auto")
    assert blas.requested()


@pytest.mark.skipif(not AMD, reason="needs an AMD CPU and a C compiler")
@pytest.mark.parametrize("answered", [False, True])
def test_the_command_follows_the_verdict_and_says_when_it_answers(tmp_path, answered):
    _verdict(tmp_path, answered)
    env = {k: v for k, v in os.environ.items() if k != blas.ENV}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-m", "funcsac", "--help"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = "MKL runs the kernels of this AMD CPU's instruction set" in done.stderr
    assert said is answered and ("FUNCSAC_MKL_VENDOR_CHECK=shipped turns this off" in
                                 done.stderr) is answered


def test_a_kept_no_builds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _verdict(tmp_path, False)
    monkeypatch.setattr(blas, "_build", lambda folder: pytest.fail("built despite a kept no"))
    assert blas._load("auto") is False
