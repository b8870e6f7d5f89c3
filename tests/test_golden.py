"""The goldens of ``golden.py``: each preset's 50 gradient steps and a 2,000-step driver run give
bitwise the recorded digests on a machine (CPU and torch) that recorded them, and elsewhere the
recorded per-field sums of |x| within a tolerance (other kernels round differently). A checkpoint
written by an earlier funcsac (``golden/checkpoint``) resumes and continues."""
import json
import shutil

import pytest
import torch

import golden
from golden import DRIVER, UPDATES, machine, one_thread, resume_driver, run_driver, run_preset

# another CPU's kernels round differently. Over 50 steps that moved the parameters' sketches by
# up to 0.016 (relative, flashsac's actor) between one thread and two here, and Adam's moments
# by up to 0.13, where another random stream moved the parameters' by 0.3 to 2: the parameters
# are compared, at 0.1
RTOL, PARAMETERS = 0.1, ("actor", "critic", "target_critic", "log_alpha", "encoder")


def _recorded(path):
    machines = json.loads(path.read_text())["machines"]
    return machines.get(machine()), next(iter(machines.values()))


def _assert_summary_close(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for field in PARAMETERS:
        a, b = torch.tensor(got[field]), torch.tensor(want[field])
        assert (a - b).norm() <= RTOL * b.norm(), f"{field} moved elsewhere: {a} vs {b}"


@pytest.mark.parametrize("name", list(golden.PRESETS))
def test_a_presets_updates_give_the_recorded_numbers(name):
    here, anywhere = _recorded(UPDATES)
    d, s = one_thread(run_preset, name)
    if here is not None:
        assert d == here[name]["digest"], f"{name}'s 50 steps changed their numbers"
    _assert_summary_close(s, anywhere[name]["summary"])


def test_a_driver_run_gives_the_recorded_evaluations(tmp_path):
    here, anywhere = _recorded(DRIVER)
    got = one_thread(run_driver, tmp_path / "run")
    want = here or anywhere
    # the evaluations before learning start hold on any CPU (random actions, the env's float64)
    assert [e[0] for e in got["evals"]] == [e[0] for e in want["evals"]]
    assert got["evals"][0] == want["evals"][0]
    if here is not None:
        assert got["evals"] == here["evals"] and got["digest"] == here["digest"]


def test_a_checkpoint_written_by_an_earlier_funcsac_resumes(tmp_path):
    here, _ = _recorded(DRIVER)
    run = tmp_path / "run"
    shutil.copytree(golden.HERE / "checkpoint", run)
    got = one_thread(resume_driver, run)
    assert got["eval"][0] == 2_200 and torch.isfinite(torch.tensor(got["eval"][1:])).all()
    if here is not None:
        assert got == here["resumed"]
