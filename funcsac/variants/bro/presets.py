"""BRO's preset."""
from __future__ import annotations

from ...registry import register_preset

# BRO (Nauman et al. 2024, "Bigger, Regularized, Optimistic"; naumix/BiggerRegularizedOptimistic
# jaxrl/bro, configs/bro_default.py, train_parallel.py): the bro algorithm (2 critics of 100
# quantiles combined by their mean, pessimism 0, an optimistic actor that explores: std x 0.75,
# KL target 0.05), BroNet critics of width 512 with 2 blocks and an actor of width 256 with 1
# block (orthogonal init), AdamW (optax's weight decay 1e-4 on every parameter), learning rates
# 3e-4, the temperature's Adam beta1 0.5, target entropy -act_dim / 2, log-std in [-10, 2],
# replay ratio 10, batch 128, 2,500 random steps, and full resets (networks, targets,
# optimizers, temperature, the optimistic actor and its adjustments) at env steps 15k, 50k,
# 250k, 500k, 750k, 1M, 1.5M and 2M (bro_learner.py's reset_list).
SETTINGS = {"algorithm": "bro", "network": "bronet", "hidden_sizes": (512, 512),
            "actor_hidden_sizes": (256,), "actor_lr": 3e-4, "critic_lr": 3e-4, "alpha_lr": 3e-4,
            "weight_decay": 1e-4, "weight_decay_on": "all", "target_entropy_scale": 0.5,
            "alpha_adam_betas": (0.5, 0.999), "log_std_min": -10.0, "utd": 10,
            "batch_size": 128, "learning_starts": 2_500,
            "reset_at": (15_000, 50_000, 250_000, 500_000, 750_000, 1_000_000, 1_500_000,
                         2_000_000)}

register_preset("bro", SETTINGS)
