"""FlashSAC's preset."""
from __future__ import annotations

import math

from ...registry import register_preset

# FlashSAC (Kim et al. 2026; leeyngdo/FlashSAC configs/agent/flashSAC.yaml,
# configs/flashSAC_base.yaml, scripts/run_mujoco.sh, flash_rl/agents/flashSAC/): the
# flashsac algorithm (SimbaV2's order, 2 categorical critics of 101 bins on [-5, 5], batch
# statistics over the current and next rows, the cross-entropy averaged over the critics)
# and networks (critics 2 blocks of width 256, actor 2 blocks of width 128: batch-normalised
# inverted residual blocks, unit-norm weights; the actor's head as leeyngdo/FlashSAC has it
# since 9100e66 (merged through 9f6ebe7, 2026-06-26, "Fix SAC actor head initialization"): the
# mean's rows N(0, 1e-3), the log-std's zero, the log-std tanh-squashed into [-5, 0]; the code
# that ran the published results, Holiday-Robot/FlashSAC layer.py:111-142, had unit-norm mean
# and log-std layers and the log-std in [-10, 2] (--policy-head unit --log-std-min -10
# --log-std-max 2),
# which learnt HalfCheetah-v5 well below this head here: bench/results/RESULTS.md), no observation
# normalisation (the input's batch normalisation does it), rewards divided by max(std of the
# discounted return, its largest |value| / 5) (normalized_G_max
# 5), Adam with learning rates 3e-4 decayed along a cosine to 1.5e-4 over 1M steps of each
# optimiser (the actor's and the temperature's take one every 2 updates, so theirs reach
# about 2.25e-4 in a 1M-step run; the warmup is one step from 3e-4 to 3e-4), initial
# temperature 0.01, target entropy that of a Gaussian of std 0.15 per action (0.5 log(2 pi e
# 0.15^2) = -0.478 per dimension), an actor and temperature step every 2 critic steps, tau
# 0.01, gamma 0.99, batch 512, 10,000 random steps, UTD 1 (run_mujoco.sh's settings for Gym
# MuJoCo), and the policy's exploration noise held for a zeta(2)-distributed number of
# steps, at most 16 (the random actions before it a new uniform draw each step, train.py's
# action_space.sample()). Not carried over: the return is restarted after an episode's end
# (there its last step's reward alone); the noise's holds restart every 1,024 environment
# steps (funcsac's noise blocks) and run per sub-environment (there one count for all);
# FlashSAC's bf16/fp16 mixed precision (off in its MuJoCo script).
SETTINGS = {"algorithm": "flashsac", "network": "flashsac", "hidden_sizes": (256, 256),
            "actor_hidden_sizes": (128, 128), "num_bins": 101, "v_min": -5.0, "v_max": 5.0,
            "scale_rewards": True, "return_bound": 5.0, "actor_lr": 3e-4,
            "critic_lr": 3e-4, "alpha_lr": 3e-4, "lr_decay_to": 0.5,
            "lr_decay_shape": "cosine", "lr_decay_steps": 1_000_000, "init_alpha": 0.01,
            "target_entropy_scale": -0.5 * math.log(2 * math.pi * math.e * 0.15 ** 2),
            "log_std_min": -5.0, "log_std_max": 0.0, "policy_head": "small",
            "policy_delay": 2, "tau": 0.01,
            "gamma": 0.99, "batch_size": 512, "learning_starts": 10_000, "utd": 1,
            "noise_hold": 2.0, "noise_hold_max": 16, "hold_random_actions": False}

register_preset("flashsac", SETTINGS)

# FlashSAC as the code that produced its published Gym MuJoCo results ran it (leeyngdo/FlashSAC at
# 87edc90, the commit of Holiday-Robot/FlashSAC's HEAD beside results/stateRL_cpusim/FlashSAC.csv):
# flashsac with that code's actor head, separate mean and log-std layers with unit-norm rows,
# kept unit-norm after every step, the log-std tanh-squashed into [-10, 2] (layer.py:111-142,
# agents/utils/network.py:50). What else still differs from those runs: docs/algorithms.md.
register_preset("flashsac-published", {**SETTINGS, "policy_head": "unit", "log_std_min": -10.0,
                                       "log_std_max": 2.0})

# FlashSAC with many environments at once, as its GPU-simulator scripts run it (leeyngdo/FlashSAC
# at f2da589, scripts/run_mjlab.sh and run_isaaclab.sh, the same values in both): 1,024
# environments (num_train_envs), a replay buffer of 10M rows (buffer_max_length), learning after
# 100,000 rows (buffer_min_length), batches of 2,048 (sample_batch_size), 2 gradient steps per
# step of all environments (updates_per_interaction_step), 3-step returns and gamma 0.99; the
# learning rates decay over the critic's optimiser steps of the scripts' 50,000,896 env steps,
# 48,829 vector steps x 2 = 97,658 (learning_rate_decay_rate 1.0). The rest is flashsac's.
# Not carried over: fp16 autocast with a gradient scaler (use_amp; --precision bf16 is funcsac's
# nearest, where the hardware has bf16), evaluation over 1,024 parallel episodes, asymmetric
# observations (off in these two scripts). Other simulators' scripts change gamma and n_step
# (MuJoCo Playground 0.97 and 1, Genesis 0.95 and 1, ManiSkill 0.9 and 1).
register_preset("flashsac-parallel", {
    **SETTINGS, "num_envs": 1024, "buffer_size": 10_000_000, "learning_starts": 100_000,
    "batch_size": 2048, "gradient_steps": 2, "utd": 1, "n_step": 3, "gamma": 0.99,
    "lr_decay_steps": 97_658})
