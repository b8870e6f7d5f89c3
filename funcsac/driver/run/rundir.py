"""The run directory: refusing to mix two runs in one, and moving an old run aside on request."""
from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

from .status import LOGGER

RUN_FILES = ("config.json", "checkpoint.pt", "metrics.csv", "eval.csv", "replay")


def run_files(run_dir: Path) -> list:
    """The files and folders of a run that ``run_dir`` holds."""
    return [name for name in RUN_FILES if (Path(run_dir) / name).exists()]


def _aside(run_dir: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidates = (run_dir.with_name(f"{run_dir.name}.old-{stamp}{f'-{i}' if i else ''}")
                  for i in range(1000))
    return next(p for p in candidates if not p.exists())


def prepare_run_dir(run_dir: Path, resume: bool, overwrite: bool) -> None:
    """Make ``run_dir`` ready for a run. A new run refuses a directory that holds a run, unless
    ``overwrite``, which renames the old directory to ``RUN_DIR.old-YYYYmmdd-HHMMSS`` (nothing is
    deleted); ``resume`` needs the run to be there (checked when its checkpoint is read)."""
    run_dir = Path(run_dir)
    if resume and overwrite:
        raise ValueError("--resume continues the run in the run directory and --overwrite moves "
                         "it aside: give one of them")
    found = run_files(run_dir)
    if found and not resume:
        if not overwrite:
            raise ValueError(f"{run_dir} already holds a run ({', '.join(found)}); continue it "
                             "with --resume, or give a new --run-dir (--overwrite moves the old "
                             "run aside to RUN_DIR.old-TIMESTAMP)")
        aside = _aside(run_dir)
        run_dir.rename(aside)
        LOGGER.info(f"moved the previous run in {run_dir} to {aside}")
    run_dir.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def removed_if_the_start_fails(run_dir: Path):
    """``run_dir`` removed again, with what the start wrote into it, if the start of a run
    inside fails and the directory did not exist before it (a typo in an env id leaves no
    empty run directory behind)."""
    existed = Path(run_dir).exists()
    try:
        yield
    except BaseException:
        if not existed:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


@contextlib.contextmanager
def writing_to(run_dir: Path):
    """An ``OSError`` on a file in ``run_dir`` (a read-only or full file system) raised inside
    becomes a ``ValueError`` naming the file and saying that the last checkpoint is intact (the
    checkpoint and the replay chunks are replaced whole, atomically)."""
    try:
        yield
    except OSError as e:
        where = Path(e.filename or "").resolve()
        if e.filename is None or Path(run_dir).resolve() not in (where, *where.parents):
            raise
        raise ValueError(f"could not write {e.filename} ({e.strerror or e}): the run stopped; "
                         f"its last checkpoint in {run_dir} is intact: make the run directory "
                         "writable (or free space) and continue with --resume") from e
