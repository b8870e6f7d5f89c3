"""MKL answered on AMD CPUs (``funcsac.blas``): chosen before torch is imported, by the setting or
a measurement kept per machine, passed on to child processes, recorded with the numerics, and
left alone wherever anything is unexpected."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from funcsac import blas
from funcsac.cpu import cpu_description

# MKL answers differently only on AMD CPUs, and the library needs a C compiler
ON_AMD = cpu_description()["vendor"] == "AuthenticAMD"
AMD = ON_AMD and bool(shutil.which("cc") or shutil.which("gcc"))

# prints: whether MKL is answered, the setting passed on, numerics' entry, a product's error
CHILD = r"""
import json, os, sys
{before}
import funcsac, torch
from funcsac.machine import numerics
a, b = torch.randn(256, 23, dtype=torch.float64), torch.randn(23, 256, dtype=torch.float64)
error = float((a.float() @ b.float() - a @ b).abs().max())
print(json.dumps([funcsac.blas.answered, os.environ.get("FUNCSAC_MKL_VENDOR_CHECK"),
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
    done = _child(tmp_path)
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
