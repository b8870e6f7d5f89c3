"""SimBa's preset."""
from __future__ import annotations

from ...registry import register_preset

# SimBa (Lee et al. 2024, "SimBa: Simplicity Bias for Scaling Up Parameters in Deep RL";
# SonyResearch/simba configs/agent/sac_simba.yaml, configs/base.yaml, scale_rl/): the simba
# algorithm (its update's order and losses, scale_rl/agents/sac), SimBa networks (initialised
# as there: orthogonal embedding and head, He-normal blocks), the critics of width 512 with 2
# blocks, the actor of width 128 with 1 block, log-std in [-10, 2], observations normalised
# by running statistics, AdamW (optax.adamw: weight decay 1e-2 on every parameter) with
# learning rates 1e-4, initial temperature 0.01 learned at 1e-4 (Adam), target entropy
# -act_dim / 2, UTD 2 (a whole update per batch), as published (4.2 M parameters per
# critic). Not carried over: gamma from the episode length (TD-MPC2's heuristic; set
# --gamma). On tasks without terminations a single critic (PER_TASK), as sac_simba.yaml's
# critic_use_cdq: ${env.episodic} (no min over two).
SETTINGS = {"algorithm": "simba", "network": "simba", "hidden_sizes": (512, 512),
            "actor_hidden_sizes": (128,),
            "normalize_obs": True, "actor_lr": 1e-4, "critic_lr": 1e-4, "alpha_lr": 1e-4,
            "weight_decay": 1e-2, "weight_decay_on": "all", "init_alpha": 0.01,
            "log_std_min": -10.0, "target_entropy_scale": 0.5, "utd": 2}

# tasks without terminations: a single critic (critic_use_cdq: ${env.episodic})
register_preset("simba", SETTINGS, per_task={"num_critics": (
    {"HalfCheetah": 1, "Swimmer": 1, "Reacher": 1, "Pusher": 1, "Pendulum": 1}, 2,
    "SonyResearch/simba sac_simba.yaml critic_use_cdq: env.episodic")})
