"""An experiment's Tune state, kept whole across a kill.

Ray Tune writes its experiment state file (which trials exist, their configs and latest
checkpoints) in place and copies it into the experiment folder without a rename, so a kill at the
wrong moment leaves that file cut short, and Tune then restarts the experiment from nothing.
``StateSnapshot`` copies the state files, whole, into a snapshot folder of the experiment after
each time Tune writes them; ``restore_snapshot`` puts them back before a resume. A snapshot's
files carry a suffix of their own, so that Tune, which copies every ``.json`` and ``.pkl`` of the
experiment folder back when it resumes, leaves them alone.
"""
from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

from ray import tune

SNAPSHOT_PREFIX = ".funcsac-state-"
STATE_PATTERN = "experiment_state-*.json"
SUFFIX = ".whole"


def write_snapshot(files, experiment: Path) -> Path:
    """Copy ``files`` into a new numbered snapshot folder of ``experiment``, which appears whole
    (a rename), then drop the older snapshots. Returns the new folder."""
    older = _snapshots(experiment)
    number = int(older[-1].name[len(SNAPSHOT_PREFIX):]) + 1 if older else 0
    tmp = experiment / f"{SNAPSHOT_PREFIX}tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for f in files:
        shutil.copy2(f, tmp / (Path(f).name + SUFFIX))
    final = experiment / f"{SNAPSHOT_PREFIX}{number:06d}"
    os.replace(tmp, final)
    for old in older:
        shutil.rmtree(old, ignore_errors=True)
    return final


def restore_snapshot(experiment: Path) -> None:
    """Before a resume: put the newest snapshot's files back in ``experiment`` where its copies
    differ (a file cut short), and move aside a later session's state file that does not parse
    (killed before its first snapshot), so that Tune resumes from the newest whole state. Raises
    ValueError where no whole state is left (Tune would restart the experiment from nothing)."""
    snapshots = _snapshots(experiment)
    if snapshots:
        for f in sorted(snapshots[-1].glob(f"*{SUFFIX}")):
            target = experiment / f.name[:-len(SUFFIX)]
            if not target.is_file() or target.read_bytes() != f.read_bytes():
                tmp = experiment / f".{f.name}.tmp"
                shutil.copy2(f, tmp)
                os.replace(tmp, target)
    for state in sorted(experiment.glob(STATE_PATTERN)):
        try:
            json.loads(state.read_text())
        except ValueError:
            aside = state.with_name(state.name + ".cut-short")
            os.replace(state, aside)
            warnings.warn(f"{state.name} was cut short (the experiment was killed as Tune wrote "
                          f"it) and no snapshot holds it: moved to {aside.name}; the experiment "
                          "resumes from its previous state", stacklevel=2)
    if not any(experiment.glob(STATE_PATTERN)):
        raise ValueError(f"{experiment} holds no whole Tune experiment state (the experiment was "
                         "killed before Tune first wrote it): start it again under another --name")


def _snapshots(experiment: Path) -> list:
    return sorted(p for p in Path(experiment).glob(f"{SNAPSHOT_PREFIX}[0-9]*") if p.is_dir())


class StateSnapshot(tune.Callback):
    """Snapshots the driver's state files (the experiment state, the searcher's and the
    scheduler's) each time Tune has written them anew. Tune writes them in the driver's thread
    before its step's callbacks run, so they are whole when copied."""

    def __init__(self):
        self._stamp = None

    def on_step_end(self, iteration, trials, **info):
        if not trials:
            return
        storage = trials[0].storage
        staging = Path(storage.experiment_driver_staging_path)
        files = sorted(p for p in staging.glob("*") if p.is_file())
        stamp = tuple((p.name, st.st_mtime_ns, st.st_size) for p in files for st in [p.stat()])
        if stamp == self._stamp or not any(p.match(STATE_PATTERN) for p in files):
            return
        write_snapshot(files, Path(storage.experiment_fs_path))
        self._stamp = stamp
