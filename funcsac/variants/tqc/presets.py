"""TQC's preset."""
from __future__ import annotations

from ...registry import register_preset

# TQC (Kuznetsov et al. 2020; the paper's code, SamsungLabs/tqc_pytorch main.py,
# tqc/structures.py and tqc/trainer.py): 5 distributional critics of 25 quantiles each, 3 x 512
# wide, an actor 2 x 256, learning rates 3e-4; the top quantiles dropped per critic from the
# target per task (README.md: HalfCheetah 0, Hopper 5, the others 2; PER_TASK). (sb3-contrib's
# and sbx's TQC default to 2 critics of 256 x 256, the same 25 quantiles and 2 dropped.)
SETTINGS = {"algorithm": "tqc", "num_critics": 5, "num_quantiles": 25,
            "critic_lr": 3e-4, "alpha_lr": 3e-4, "hidden_sizes": (512, 512, 512),
            "actor_hidden_sizes": (256, 256), "log_std_squash": "clip", "log_std_min": -20.0}

register_preset("tqc", SETTINGS, per_task={"drop_quantiles": (
    {"HalfCheetah": 0, "Hopper": 5}, 2, "SamsungLabs/tqc_pytorch README.md, per task")})
