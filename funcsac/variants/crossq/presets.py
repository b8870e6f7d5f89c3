"""CrossQ's preset."""
from __future__ import annotations

from ...registry import register_preset

# CrossQ (Bhatt et al. 2024; sbx/crossq/crossq.py and policies.py): no target network,
# critics evaluated on the current and next pairs in one pass, batch renormalisation after
# each activation in the critics and the actor (sbx's batch_norm_actor, the actor in
# training mode during its step), an actor step every 3 critic steps, learning rates 1e-3,
# Adam beta1 0.5 for the networks and 0.9 for the temperature; sbx's widths, critics 2 x 1024
# and actor 2 x 256 (sbx/crossq/policies.py: "wider critic required for stable BatchNorm";
# the paper's own code, adityab/CrossQ train.py, has critics 2 x 2048).
SETTINGS = {"algorithm": "crossq", "critic_batch_renorm": True, "actor_batch_renorm": True,
            "policy_delay": 3, "actor_lr": 1e-3, "critic_lr": 1e-3, "alpha_lr": 1e-3,
            "adam_betas": (0.5, 0.999), "alpha_adam_betas": (0.9, 0.999),
            "hidden_sizes": (1024, 1024), "actor_hidden_sizes": (256, 256),
            "weight_init": "lecun_normal", "log_std_squash": "clip", "log_std_min": -20.0}

register_preset("crossq", SETTINGS)
