"""Run logs: CSV files, TensorBoard and Weights & Biases on request, and per-phase
timings."""
from __future__ import annotations

import contextlib
import csv
import io
import secrets
import time
from collections import defaultdict
from pathlib import Path

from ...platform.files import write_atomically

EVAL_COLUMNS = ["step", "return_mean", "return_std", "episode_length_mean"]
PHASES = ("compile", "collect", "update", "eval", "checkpoint")


class Timings:
    """Accumulated wall time per phase (seconds)."""

    def __init__(self, totals=None):
        self.totals = defaultdict(float, totals or {})

    @contextlib.contextmanager
    def phase(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.totals[name] += time.perf_counter() - start

    def summary(self) -> str:
        total = sum(self.totals.values()) or 1.0
        return "\n".join(f"  {name:<11}{self.totals[name]:9.1f} s  "
                         f"{100 * self.totals[name] / total:5.1f}%"
                         for name in PHASES)


class CsvLog:
    """Appends dict rows to a CSV file; the columns are fixed by the first row written."""

    def __init__(self, path: Path, columns=None):
        self.path = Path(path)
        self.columns = columns
        if self.path.exists() and self.path.stat().st_size:
            with open(self.path, newline="") as f:
                self.columns = next(csv.reader(f))

    def write(self, row: dict) -> None:
        new = self.columns is None or not self.path.exists()
        self.columns = self.columns or list(row)
        with open(self.path, "a", newline="") as f:
            writer = csv.DictWriter(f, self.columns, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)

    def truncate_after(self, step: int) -> None:
        """Drop rows logged after ``step`` (rows a resumed run will write again), atomically."""
        if not self.path.exists():
            return
        with open(self.path, newline="") as f:
            rows = list(csv.DictReader(f))
        text = io.StringIO()
        writer = csv.DictWriter(text, self.columns)
        writer.writeheader()
        writer.writerows(r for r in rows if int(float(r["step"])) <= step)
        write_atomically(self.path, lambda f: f.write(text.getvalue().encode()))


class TensorBoard:
    """Scalars and the curve to TensorBoard event files in ``RUN_DIR/tensorboard``
    (``--tensorboard``); a resumed run appends to the same folder."""

    def __init__(self, run_dir: Path):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as e:
            raise ValueError("--tensorboard needs tensorboard: pip install "
                             "'funcsac[tensorboard]'") from e
        self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    def write(self, prefix: str, row: dict, step: int) -> None:
        for k, v in _scalars(row).items():
            self.writer.add_scalar(f"{prefix}/{k}", v, step)

    def image(self, name: str, path: Path, step: int) -> None:
        import matplotlib.image
        self.writer.add_image(name, matplotlib.image.imread(path)[..., :3], step,
                              dataformats="HWC")

    def close(self) -> None:
        self.writer.close()


class WandbLog:
    """Config, scalars and images to a Weights & Biases run. Its id is kept in
    ``RUN_DIR/wandb-id``, so a resumed funcsac run continues the same W&B run."""

    def __init__(self, run_dir: Path, project: str, mode: str, config: dict):
        try:
            import wandb
        except ImportError as e:
            raise ValueError("--wandb-project needs wandb: pip install 'funcsac[wandb]'") from e
        id_file = Path(run_dir) / "wandb-id"
        if not id_file.exists():
            id_file.write_text(secrets.token_hex(4))
        self.wandb = wandb
        self.run = wandb.init(project=project, mode=mode, dir=str(run_dir),
                              id=id_file.read_text().strip(), resume="allow",
                              name=Path(run_dir).resolve().name, config=config,
                              reinit="create_new", allow_val_change=True,
                              settings=wandb.Settings(quiet=True))

    def write(self, prefix: str, row: dict, step: int) -> None:
        self.run.log({f"{prefix}/{k}": v for k, v in _scalars(row).items()}, step=step)

    def image(self, name: str, path: Path, step: int) -> None:
        self.run.log({name: self.wandb.Image(str(path))}, step=step)

    def close(self) -> None:
        self.run.finish()


class Boards:
    """Every scalar logger of a run (TensorBoard, W&B) as one."""

    def __init__(self, boards: list):
        self.boards = boards

    def write(self, prefix: str, row: dict, step: int) -> None:
        """The row's numbers as ``prefix/column`` scalars at env step ``step``."""
        for b in self.boards:
            b.write(prefix, row, step)

    def image(self, name: str, path: Path, step: int) -> None:
        """A PNG file as image ``name`` at env step ``step``."""
        for b in self.boards:
            b.image(name, path, step)

    def close(self) -> None:
        for b in self.boards:
            b.close()


def _scalars(row: dict) -> dict:
    """The row's numeric columns, but ``step``."""
    return {k: v for k, v in row.items()
            if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}
