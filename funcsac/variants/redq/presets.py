"""REDQ's preset: SAC's algorithm at REDQ's settings."""
from __future__ import annotations

from ...registry import register_preset

# MBPO's target entropies (REDQ's target_entropy="mbpo"; watchernyu/REDQ redq/algos/core.py);
# on other tasks REDQ's "auto", -act_dim (funcsac's default)
MBPO_ENTROPY = ({"Hopper": -1.0, "HalfCheetah": -3.0, "Walker2d": -3.0, "Ant": -4.0,
                 "Humanoid": -2.0}, None, "MBPO's, watchernyu/REDQ redq/algos/core.py")


# REDQ (Chen et al. 2021; watchernyu/REDQ redq/algos/redq_sac.py): 10 critics, target min
# over a random 2, UTD 20; after the 20 critic steps of an environment step, one actor and
# one temperature step against the mean of all critics; learning rates 3e-4 for Q, pi and
# alpha (redq_sac.py:32, 48-51, 60); MBPO's target entropy per task (PER_TASK).
SETTINGS = {"num_critics": 10, "num_target_critics": 2, "actor_q_reduction": "mean",
            "policy_delay": 20, "utd": 20, "actor_lr": 3e-4, "critic_lr": 3e-4,
            "alpha_lr": 3e-4, "weight_init": "xavier_uniform", "log_std_squash": "clip",
            "log_std_min": -20.0}

register_preset("redq", SETTINGS, per_task={"target_entropy": MBPO_ENTROPY})
