"""The documentation's shell commands run as written: every ```bash block of README.md and of each
page in docs/, a page's commands in order, in one temporary workspace (its home folder too, for
``~``), each ``funcsac`` command run in-process with a small budget: fewer environment steps,
episodes and rows, no compile; nothing else of the command changes. The commands the suite cannot
run (installs, servers, clusters, downloads, benchmarks) are listed in ``NOT_RUN`` with the reason;
a command of any other kind fails the test, so a new one in the docs is run or given a reason."""
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from funcsac.driver.cli import main
from helpers import torchrun

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# a command beginning so -> why the suite does not run it
NOT_RUN = {
    "pip install": "an install: .ci/run runs README's install commands in fresh environments",
    "python -m pytest": "the suite itself",
    "python -m bench.": "a benchmark (bench/), run apart from the suite",
    "ray start": "starts a Ray cluster's server",
    "tensorboard ": "starts a web server",
    "funcsac tune --address": "joins a Ray cluster",
    "funcsac train --env-id HalfCheetah-v5 --offline-ratio 0.25": (
        "a downloaded Minari dataset (tests/test_datasets.py loads a local one)"),
}
# a part of a command that needs an extra the test install (README's second command) leaves out ->
# the module it needs: such a command runs where that is installed
EXTRAS = {"--env-id LunarLander-v3": "Box2D", "--tensorboard": "tensorboard",
          "--env-id warp/": "mujoco_warp"}
# the budget of every train command that starts a run, and of a resume that runs longer
STEPS, LEARNING_STARTS, RESUMED_STEPS = 120, 100, 160


def commands(page: Path) -> list:
    """The page's shell commands in order: a bash block's lines, continuations joined, comments
    and blank lines dropped, ``a && b`` as two."""
    found = []
    for block in re.findall(r"^```bash\n(.*?)^```$", page.read_text(), flags=re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = " ".join(map(shlex.quote, shlex.split(line, comments=True)))
            found.extend(c.strip() for c in words.split(" '&&' ") if c.strip())
    return found


def why_not_run(command: str):
    for part, module in EXTRAS.items():
        if part in command and importlib.util.find_spec(module) is None:
            return f"{part} needs {module}, which the test install leaves out"
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


def flag(words: list, name: str):
    """The value after ``--name`` in ``words``, else None."""
    return words[words.index(name) + 1] if name in words else None


def with_small_budget(words: list) -> list:
    """A ``funcsac`` command's words with a test's budget: the same command, fewer steps,
    episodes and rows, eager, without a progress bar."""
    def set_flag(name, value):
        if name in words:
            words[words.index(name) + 1] = str(value)
        else:
            words.extend([name, str(value)])

    words = list(words)
    command = words[0]
    if command == "train" and "--help" not in words:
        if "--resume" in words:
            if "--total-steps" in words:
                set_flag("--total-steps", RESUMED_STEPS)
        else:
            set_flag("--total-steps", STEPS)
            set_flag("--learning-starts", LEARNING_STARTS)
            set_flag("--buffer-size", min(int(flag(words, "--buffer-size") or 10_000), 10_000))
            set_flag("--checkpoint-every", 0)
            set_flag("--eval-every", 0)
        set_flag("--eval-episodes", 1)
        words += ["--no-compile", "--no-progress"]
    elif command == "tune" and "--resume" not in words:
        # ten reports, as the docs' 20,000 steps evaluated every 2,000 give
        set_flag("--total-steps", 200)
        set_flag("--eval-every", 20)
        set_flag("--learning-starts", 100)
        set_flag("--eval-episodes", 1)
        set_flag("--num-samples", 2)
        words += ["--no-compile", "--no-progress"]
    elif command in ("evaluate", "collect"):
        set_flag("--episodes" if command == "evaluate" else "--steps",
                 1 if command == "evaluate" else 200)
    return words


def run(command: str, workspace: Path) -> Path:
    """Runs one command in ``workspace``; returns the folder the next command runs in."""
    words = [os.path.expanduser(w) for w in shlex.split(command)]
    if words[0] == "cd":
        return workspace / words[1]
    if words[:3] == ["python", "-m", "funcsac"]:
        words = ["funcsac", *words[3:]]
    if words[0] == "torchrun":  # its ranks, on a free port, each with the small budget
        start = words.index("funcsac") + 1
        done = torchrun(int(flag(words, "--nproc-per-node")), "-m", "funcsac",
                        *with_small_budget(words[start:]), cwd=workspace)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        return workspace
    assert words[0] == "funcsac", f"a command of a kind this test does not know: {command}"
    argv = with_small_budget(words[1:])
    if words[1] == "tune":  # in a process of its own, whose Ray ends with it
        pytest.importorskip("ray", reason="the tune extra")
        done = subprocess.run([sys.executable, "-m", "funcsac", *argv], cwd=workspace,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    elif "--help-all" in argv:
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 0, command
    else:
        assert main(argv) == 0, f"{command}\n(run as funcsac {shlex.join(argv)})"
    return workspace


@pytest.fixture(scope="module")
def trained_pendulum(tmp_path_factory):
    """README's train command's run, runs/pendulum (other pages act on it), with a small
    budget."""
    workspace = tmp_path_factory.mktemp("readme")
    first = next(c for c in commands(ROOT / "README.md") if c.startswith("funcsac train"))
    assert "--run-dir runs/pendulum" in first, first
    cwd = os.getcwd()
    os.chdir(workspace)
    try:
        run(first, workspace)
    finally:
        os.chdir(cwd)
    return workspace / "runs" / "pendulum"


@pytest.mark.parametrize("page", [pytest.param(p, id=str(p.relative_to(ROOT)))
                                  for p in PAGES if commands(p)])
def test_every_command_of_the_page_runs(page, tmp_path, monkeypatch, trained_pendulum):
    workspace = tmp_path / "work"
    shutil.copytree(ROOT / "docs" / "examples", workspace / "docs" / "examples")
    if not any(c.startswith("funcsac train") and "--run-dir runs/pendulum" in c
               and "--resume" not in c for c in commands(page)):
        shutil.copytree(trained_pendulum, workspace / "runs" / "pendulum")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    cwd, ran = workspace, 0
    for command in commands(page):
        if why_not_run(command):
            continue
        monkeypatch.chdir(cwd)
        cwd = run(command, cwd)
        ran += 1
    assert ran, f"{page.name} has commands, none of which the test runs"


def test_each_reason_not_to_run_a_command_still_applies_to_one():
    """No stale entry in NOT_RUN: each names a command the docs hold."""
    every = [c for p in PAGES for c in commands(p)]
    for start in NOT_RUN:
        assert any(c.startswith(start) for c in every), f"no command of the docs starts {start!r}"


def test_the_budget_shrinks_a_run_and_leaves_the_rest_as_written():
    words = with_small_budget(shlex.split(
        "train --preset tqc --env-id Hopper-v5 --total-steps 100000 --eval-episodes 10 "
        "--run-dir runs/x"))
    assert words[:5] == ["train", "--preset", "tqc", "--env-id", "Hopper-v5"]
    assert flag(words, "--total-steps") == str(STEPS) and flag(words, "--eval-episodes") == "1"
    assert flag(words, "--run-dir") == "runs/x" and "--no-compile" in words
    resumed = with_small_budget(["train", "--run-dir", "r", "--resume"])
    assert "--total-steps" not in resumed and "--learning-starts" not in resumed
