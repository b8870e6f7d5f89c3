"""DroQ's preset: SAC's algorithm with dropout critics at DroQ's settings."""
from __future__ import annotations

from ..redq.presets import MBPO_ENTROPY
from ...registry import register_preset

# DroQ (Hiraoka et al. 2022; TakuyaHiraoka/Dropout-Q-Functions-for-Doubly-Efficient-
# Reinforcement-Learning, built on REDQ's code): 2 critics with dropout and LayerNorm, UTD
# 20, one actor step after the 20 critic steps, REDQ's learning rates 3e-4; the dropout rate
# (0.01 by default) and MBPO's target entropy per task (PER_TASK).
SETTINGS = {"num_critics": 2, "critic_layer_norm": True,
            "actor_q_reduction": "mean", "policy_delay": 20, "utd": 20, "actor_lr": 3e-4,
            "critic_lr": 3e-4, "alpha_lr": 3e-4, "weight_init": "xavier_uniform",
            "log_std_squash": "clip", "log_std_min": -20.0}

register_preset("droq", SETTINGS, per_task={
    "target_entropy": MBPO_ENTROPY,
    "critic_dropout": ({"Hopper": 1e-4, "Walker2d": 5e-3, "Ant": 1e-2, "Humanoid": 0.1}, 1e-2,
                       "DroQ's README.md, per task")})
