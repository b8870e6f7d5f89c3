"""SimbaV2's presets: at UTD 2 as published, and at UTD 1."""
from __future__ import annotations

from ...registry import register_preset

# SimbaV2 (Lee et al. 2025, "Hyperspherical Normalization for Scalable Deep Reinforcement
# Learning"; dojeon-ai/SimbaV2 configs/agent/simbaV2.yaml, configs/online_rl.yaml,
# configs/env/mujoco.yaml, scale_rl/agents/simbaV2): the simbav2 algorithm (SimBa's order,
# categorical critics of 101 bins on [-5, 5], the target from the critic of the lower
# expected value: critic_use_cdq, MuJoCo's tasks being episodic) on SimbaV2's hyperspherical
# networks (critics of width 512 with 2 blocks, an actor of width 128 with 1 block and its
# mean and log-std heads, c_shift 3, weights projected onto the sphere after each step, the
# learnable scales started as the code that ran the published results, hyper_simba at
# 6f00b6d: the network option scalers, "results" by default),
# observations normalised by running statistics, rewards divided by max(std of the
# discounted return, its largest |value| / 5) (normalized_g_max 5), Adam (no weight decay)
# with learning rates 1e-4 decayed linearly to 5e-5 over the run's gradient steps (SimbaV2's
# MuJoCo runs are 1M env steps: 2M gradient steps at UTD 2), initial temperature 0.01,
# target entropy -act_dim / 2, log-std in [-10, 2], gamma 0.995 (online_rl.yaml's heuristic
# for 1,000-step episodes), tau 0.005, batch 256, 5,000 random steps, UTD 2 (each update its
# own batch). Not carried over: the observations' normalisation here is clipped to [-10, 10]
# (there unclipped); the return is restarted after an episode's end (there, in the code
# that ran the published results, at a termination only, with its last step's reward alone).
SETTINGS = {"algorithm": "simbav2", "network": "simbav2", "hidden_sizes": (512, 512),
            "actor_hidden_sizes": (128,), "num_bins": 101, "v_min": -5.0, "v_max": 5.0,
            "normalize_obs": True, "scale_rewards": True, "return_bound": 5.0,
            "actor_lr": 1e-4, "critic_lr": 1e-4, "alpha_lr": 1e-4, "lr_decay_to": 0.5,
            "lr_decay_steps": 2_000_000, "init_alpha": 0.01, "log_std_min": -10.0,
            "target_entropy_scale": 0.5, "gamma": 0.995, "utd": 2}

register_preset("simbav2", SETTINGS)
# SimbaV2 at UTD 1 (the configs' own updates_per_interaction_step on MuJoCo), its learning
# rates decaying over 1M gradient steps
register_preset("simbav2-utd1", {**SETTINGS, "utd": 1, "lr_decay_steps": 1_000_000})
