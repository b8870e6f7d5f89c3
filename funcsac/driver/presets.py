"""Named variants of SAC as settings of the same pieces (SACConfig fields and the variants'
options, plus the driver's ``utd``: gradient steps per environment step, ``offline_ratio``: the
offline share of each batch when offline data is given, ``reset_every`` and ``reset_at``: the
environment steps of resets, and its pixel and replay settings), as each reference runs it;
where a reference sets a value per task, ``PER_TASK`` holds its table (``preset(name,
env_id)``)."""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

PRESETS = {
    "sac": {},
    # REDQ (Chen et al. 2021; watchernyu/REDQ redq/algos/redq_sac.py): 10 critics, target min
    # over a random 2, UTD 20; after the 20 critic steps of an environment step, one actor and
    # one temperature step against the mean of all critics; learning rates 3e-4 for Q, pi and
    # alpha (redq_sac.py:32, 48-51, 60); MBPO's target entropy per task (PER_TASK).
    "redq": {"num_critics": 10, "num_target_critics": 2, "actor_q_reduction": "mean",
             "policy_delay": 20, "utd": 20, "actor_lr": 3e-4, "critic_lr": 3e-4,
             "alpha_lr": 3e-4, "weight_init": "xavier_uniform", "log_std_squash": "clip",
             "log_std_min": -20.0},
    # DroQ (Hiraoka et al. 2022; TakuyaHiraoka/Dropout-Q-Functions-for-Doubly-Efficient-
    # Reinforcement-Learning, built on REDQ's code): 2 critics with dropout and LayerNorm, UTD
    # 20, one actor step after the 20 critic steps, REDQ's learning rates 3e-4; the dropout rate
    # (0.01 by default) and MBPO's target entropy per task (PER_TASK).
    "droq": {"num_critics": 2, "critic_layer_norm": True,
             "actor_q_reduction": "mean", "policy_delay": 20, "utd": 20, "actor_lr": 3e-4,
             "critic_lr": 3e-4, "alpha_lr": 3e-4, "weight_init": "xavier_uniform",
             "log_std_squash": "clip", "log_std_min": -20.0},
    # RLPD (Ball et al. 2023; ikostrikov/rlpd configs/rlpd_config.py and sac_learner.py): online
    # SAC with offline data, half of each batch from it (give --offline-data); 10 critics with
    # LayerNorm, target min over a random 2, UTD 20 critic steps and then one actor and one
    # temperature step against the mean of all critics (sac_learner.py's update), learning rates
    # 3e-4, target entropy -act_dim / 2.
    "rlpd": {"num_critics": 10, "num_target_critics": 2, "critic_layer_norm": True,
             "actor_q_reduction": "mean", "policy_delay": 20, "utd": 20, "critic_lr": 3e-4,
             "alpha_lr": 3e-4, "target_entropy_scale": 0.5, "offline_ratio": 0.5,
             "weight_init": "xavier_uniform", "log_std_squash": "clip", "log_std_min": -20.0},
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
    "simba": {"algorithm": "simba", "network": "simba", "hidden_sizes": (512, 512),
              "actor_hidden_sizes": (128,),
              "normalize_obs": True, "actor_lr": 1e-4, "critic_lr": 1e-4, "alpha_lr": 1e-4,
              "weight_decay": 1e-2, "weight_decay_on": "all", "init_alpha": 0.01,
              "log_std_min": -10.0, "target_entropy_scale": 0.5, "utd": 2},
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
    "simbav2": {"algorithm": "simbav2", "network": "simbav2", "hidden_sizes": (512, 512),
                "actor_hidden_sizes": (128,), "num_bins": 101, "v_min": -5.0, "v_max": 5.0,
                "normalize_obs": True, "scale_rewards": True, "return_bound": 5.0,
                "actor_lr": 1e-4, "critic_lr": 1e-4, "alpha_lr": 1e-4, "lr_decay_to": 0.5,
                "lr_decay_steps": 2_000_000, "init_alpha": 0.01, "log_std_min": -10.0,
                "target_entropy_scale": 0.5, "gamma": 0.995, "utd": 2},
    # FlashSAC (Kim et al. 2026; leeyngdo/FlashSAC configs/agent/flashSAC.yaml,
    # configs/flashSAC_base.yaml, scripts/run_mujoco.sh, flash_rl/agents/flashSAC/): the
    # flashsac algorithm (SimbaV2's order, 2 categorical critics of 101 bins on [-5, 5], batch
    # statistics over the current and next rows, the cross-entropy averaged over the critics)
    # and networks (critics 2 blocks of width 256, actor 2 blocks of width 128: batch-normalised
    # inverted residual blocks, unit-norm weights; the actor's head as leeyngdo/FlashSAC has it
    # since 9f6ebe7 (2026-06-26, "Fix SAC actor head initialization"): the mean's rows N(0,
    # 1e-3), the log-std's zero, the log-std tanh-squashed into [-5, 0]; the code that ran the
    # published results, Holiday-Robot/FlashSAC layer.py:111-142, had unit-norm mean and log-std
    # layers and the log-std in [-10, 2] (--policy-head unit --log-std-min -10 --log-std-max 2),
    # which learnt HalfCheetah-v5 well below this head here: bench/RESULTS.md), no observation
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
    "flashsac": {"algorithm": "flashsac", "network": "flashsac", "hidden_sizes": (256, 256),
                 "actor_hidden_sizes": (128, 128), "num_bins": 101, "v_min": -5.0, "v_max": 5.0,
                 "scale_rewards": True, "return_bound": 5.0, "actor_lr": 3e-4,
                 "critic_lr": 3e-4, "alpha_lr": 3e-4, "lr_decay_to": 0.5,
                 "lr_decay_shape": "cosine", "lr_decay_steps": 1_000_000, "init_alpha": 0.01,
                 "target_entropy_scale": -0.5 * math.log(2 * math.pi * math.e * 0.15 ** 2),
                 "log_std_min": -5.0, "log_std_max": 0.0, "policy_head": "small",
                 "policy_delay": 2, "tau": 0.01,
                 "gamma": 0.99, "batch_size": 512, "learning_starts": 10_000, "utd": 1,
                 "noise_hold": 2.0, "noise_hold_max": 16, "hold_random_actions": False},
    # BRO (Nauman et al. 2024, "Bigger, Regularized, Optimistic"; naumix/BiggerRegularizedOptimistic
    # jaxrl/bro, configs/bro_default.py, train_parallel.py): the bro algorithm (2 critics of 100
    # quantiles combined by their mean, pessimism 0, an optimistic actor that explores: std x 0.75,
    # KL target 0.05), BroNet critics of width 512 with 2 blocks and an actor of width 256 with 1
    # block (orthogonal init), AdamW (optax's weight decay 1e-4 on every parameter), learning rates
    # 3e-4, the temperature's Adam beta1 0.5, target entropy -act_dim / 2, log-std in [-10, 2],
    # replay ratio 10, batch 128, 2,500 random steps, and full resets (networks, targets,
    # optimizers, temperature, the optimistic actor and its adjustments) at env steps 15k, 50k,
    # 250k, 500k, 750k, 1M, 1.5M and 2M (bro_learner.py's reset_list).
    "bro": {"algorithm": "bro", "network": "bronet", "hidden_sizes": (512, 512),
            "actor_hidden_sizes": (256,), "actor_lr": 3e-4, "critic_lr": 3e-4, "alpha_lr": 3e-4,
            "weight_decay": 1e-4, "weight_decay_on": "all", "target_entropy_scale": 0.5,
            "alpha_adam_betas": (0.5, 0.999), "log_std_min": -10.0, "utd": 10,
            "batch_size": 128, "learning_starts": 2_500,
            "reset_at": (15_000, 50_000, 250_000, 500_000, 750_000, 1_000_000, 1_500_000,
                         2_000_000)},
    # CrossQ (Bhatt et al. 2024; sbx/crossq/crossq.py and policies.py): no target network,
    # critics evaluated on the current and next pairs in one pass, batch renormalisation after
    # each activation in the critics and the actor (sbx's batch_norm_actor, the actor in
    # training mode during its step), an actor step every 3 critic steps, learning rates 1e-3,
    # Adam beta1 0.5 for the networks and 0.9 for the temperature; sbx's widths, critics 2 x 1024
    # and actor 2 x 256 (sbx/crossq/policies.py: "wider critic required for stable BatchNorm";
    # the paper's own code, adityab/CrossQ train.py, has critics 2 x 2048).
    "crossq": {"algorithm": "crossq", "critic_batch_renorm": True, "actor_batch_renorm": True,
               "policy_delay": 3, "actor_lr": 1e-3, "critic_lr": 1e-3, "alpha_lr": 1e-3,
               "adam_betas": (0.5, 0.999), "alpha_adam_betas": (0.9, 0.999),
               "hidden_sizes": (1024, 1024), "actor_hidden_sizes": (256, 256),
               "weight_init": "lecun_normal", "log_std_squash": "clip", "log_std_min": -20.0},
    # TQC (Kuznetsov et al. 2020; the paper's code, SamsungLabs/tqc_pytorch main.py,
    # tqc/structures.py and tqc/trainer.py): 5 distributional critics of 25 quantiles each, 3 x 512
    # wide, an actor 2 x 256, learning rates 3e-4; the top quantiles dropped per critic from the
    # target per task (README.md: HalfCheetah 0, Hopper 5, the others 2; PER_TASK). (sb3-contrib's
    # and sbx's TQC default to 2 critics of 256 x 256, the same 25 quantiles and 2 dropped.)
    "tqc": {"algorithm": "tqc", "num_critics": 5, "num_quantiles": 25,
            "critic_lr": 3e-4, "alpha_lr": 3e-4, "hidden_sizes": (512, 512, 512),
            "actor_hidden_sizes": (256, 256), "log_std_squash": "clip", "log_std_min": -20.0},
    # DrQ (Kostrikov, Yarats and Fergus 2020; denisyarats/drq config.yaml, drq.py): from pixels,
    # 84x84 frames, 3 stacked, 50 encoder features, 1024x1024 actor and critics (orthogonal
    # init, utils.weight_init), batch 512 (the paper's; config.yaml's comment), a replay buffer
    # of 100,000, learning rates 1e-3, initial temperature 0.1, log-std in [-10, 2], random shifts
    # of 4 pixels, K = M = 2 shifted views of each transition (the target averaged over two, the
    # loss on both; update_critic), an actor step every 2 critic steps, 1,000 random steps
    # first, the targets (the critics with their encoder) averaged every 2 steps at tau 0.01.
    # Not carried over: action repeat (DMC's 4 or 8: a property of the task, --action-repeat),
    # the actor's own Linear + LayerNorm head over the shared convolutions (here the actor
    # reads the critics' features, detached).
    "drq": {"pixels": True, "image_size": 84, "frame_stack": 3, "image_features": 50,
            "image_pad": 4, "views": 2, "hidden_sizes": (1024, 1024), "batch_size": 512,
            "buffer_size": 100_000, "actor_lr": 1e-3, "critic_lr": 1e-3, "alpha_lr": 1e-3,
            "init_alpha": 0.1, "tau": 0.01, "target_update_every": 2, "log_std_min": -10.0,
            "policy_delay": 2, "learning_starts": 1_000, "weight_init": "orthogonal"},
}

# SimbaV2 at UTD 1 (the configs' own updates_per_interaction_step on MuJoCo), its learning rates
# decaying over 1M gradient steps
PRESETS["simbav2-utd1"] = {**PRESETS["simbav2"], "utd": 1, "lr_decay_steps": 1_000_000}

# presets that learn from offline data, which the preset cannot carry: refused without it
NEEDS_OFFLINE_DATA = {"rlpd"}


# MBPO's target entropies (REDQ's target_entropy="mbpo"; watchernyu/REDQ redq/algos/core.py);
# on other tasks REDQ's "auto", -act_dim (funcsac's default)
_MBPO_ENTROPY = ({"Hopper": -1.0, "HalfCheetah": -3.0, "Walker2d": -3.0, "Ant": -4.0,
                  "Humanoid": -2.0}, None, "MBPO's, watchernyu/REDQ redq/algos/core.py")
# preset -> setting -> (value by task, the value on any other task, the source)
PER_TASK: Dict[str, Dict[str, Tuple[dict, object, str]]] = {
    "redq": {"target_entropy": _MBPO_ENTROPY},
    "droq": {"target_entropy": _MBPO_ENTROPY,
             "critic_dropout": ({"Hopper": 1e-4, "Walker2d": 5e-3, "Ant": 1e-2, "Humanoid": 0.1},
                                1e-2, "DroQ's README.md, per task")},
    "tqc": {"drop_quantiles": ({"HalfCheetah": 0, "Hopper": 5}, 2,
                               "SamsungLabs/tqc_pytorch README.md, per task")},
    # tasks without terminations: a single critic (critic_use_cdq: ${env.episodic})
    "simba": {"num_critics": ({"HalfCheetah": 1, "Swimmer": 1, "Reacher": 1, "Pusher": 1,
                               "Pendulum": 1}, 2,
                              "SonyResearch/simba sac_simba.yaml critic_use_cdq: env.episodic")},
}


def task_of(env_id: str) -> str:
    """The task an environment id names, without its namespace and version:
    ``"Hopper-v5"`` -> ``"Hopper"``."""
    name = env_id.rsplit("/", 1)[-1]
    stem, dash, version = name.rpartition("-v")
    return stem if dash and version.isdigit() else name


def preset(name: str, env_id: Optional[str] = None) -> dict:
    """The settings of a named variant (a new dict), with its per-task values for ``env_id``'s
    task (``PER_TASK``; without ``env_id``, the values for any other task); ``ValueError`` for an
    unknown name."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
    task = task_of(env_id) if env_id else None
    chosen = {setting: values.get(task, default)
              for setting, (values, default, _) in PER_TASK.get(name, {}).items()}
    return {**PRESETS[name], **{k: v for k, v in chosen.items() if v is not None}}


def per_task_choices(name: str, env_id: str) -> Dict[str, str]:
    """What ``preset(name, env_id)`` chose per task: a line by setting, with its source."""
    task, lines = task_of(env_id), {}
    for setting, (values, default, source) in PER_TASK.get(name, {}).items():
        value = values.get(task, default)
        which = f"for {task}" if task in values else "on a task it lists no value for"
        lines[setting] = (f"preset {name} on {env_id}: {setting} = "
                          f"{'none' if value is None else value} ({which}; {source})")
    return lines
