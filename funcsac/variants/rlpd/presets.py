"""RLPD's preset: SAC's algorithm with offline data at RLPD's settings."""
from __future__ import annotations

from ...registry import register_preset

# RLPD (Ball et al. 2023; ikostrikov/rlpd configs/rlpd_config.py and sac_learner.py): online
# SAC with offline data, half of each batch from it (give --offline-data); 10 critics with
# LayerNorm, target min over a random 2, UTD 20 critic steps and then one actor and one
# temperature step against the mean of all critics (sac_learner.py's update), learning rates
# 3e-4, target entropy -act_dim / 2.
SETTINGS = {"num_critics": 10, "num_target_critics": 2, "critic_layer_norm": True,
            "actor_q_reduction": "mean", "policy_delay": 20, "utd": 20, "critic_lr": 3e-4,
            "alpha_lr": 3e-4, "target_entropy_scale": 0.5, "offline_ratio": 0.5,
            "weight_init": "xavier_uniform", "log_std_squash": "clip", "log_std_min": -20.0}

# it learns from offline data, which the preset cannot carry: refused without it
register_preset("rlpd", SETTINGS, needs_offline_data=True)
