"""Where bench's files are, and how a bench script starts another one as a child process."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
RESULTS = ROOT / "bench" / "results"  # results files, RESULTS.md and ANALYSIS.md


def python_module(module: str) -> list:
    """The command that runs ``module`` (``bench.campaigns.suite_child``) as a script."""
    return [sys.executable, "-m", module]


def child_env(env=None) -> dict:
    """``env`` (default: this process's) with the repository on ``PYTHONPATH``, so that a child
    imports ``bench`` from any working directory."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env
