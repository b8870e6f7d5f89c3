"""The agent's settings a researcher chooses, by concern: each group a frozen dataclass of fields
with a default and a one-line help (``registry.setting``), which ``SACConfig`` and the driver's
``TrainConfig`` inherit (keyword-only), and from which the command line's flags and groups are
made. ``GROUP`` names the group in the help."""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Optional, Tuple

from .registry import setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetworkSettings:
    """The actor's and the critics' networks."""

    GROUP: ClassVar[str] = "network"
    network: str = setting("mlp", "architecture of the actor and the critics")
    hidden_sizes: Tuple[int, ...] = setting(
        (256, 256), "hidden layer widths of each critic (and of the actor, unless "
        "actor_hidden_sizes); with network simba or bronet one residual block per entry, all of "
        "the same width")
    actor_hidden_sizes: Tuple[int, ...] = setting(
        (), "hidden layer widths of the actor (none given: hidden_sizes)")
    num_critics: int = setting(2, "critics in the ensemble (N)")
    log_std_min: float = setting(-5.0, "lower bound of the policy's log standard deviation")
    log_std_max: float = setting(2.0, "upper bound of the policy's log standard deviation")
    log_std_squash: str = setting(
        "tanh", "how the actor's raw log-std is bounded to [log_std_min, log_std_max]: tanh, a "
        "smooth squash (CleanRL, SimBa, BRO, DrQ), or clip (SB3, sbx, REDQ, TQC, RLPD)")
    precision: str = setting(
        "fp32", "the networks' matrix products and convolutions: fp32, or bf16 (bfloat16 "
        "operands; parameters, optimizer moments, activations between the products, losses, "
        "targets and the temperature stay float32; fast on CPUs with AMX or AVX512-BF16 and on "
        "CUDA)")
    encoder: str = setting("drq", "with pixels: the image encoder")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LearningSettings:
    """SAC's losses, targets and optimisers."""

    GROUP: ClassVar[str] = "learning"
    algorithm: str = setting("sac", "the losses update trains with")
    gamma: float = setting(0.99, "discount factor")
    tau: float = setting(
        0.005, "polyak rate of the target critics, every gradient step (algorithms with target "
        "critics)")
    actor_lr: float = setting(3e-4, "actor learning rate")
    critic_lr: float = setting(1e-3, "critic learning rate")
    alpha_lr: float = setting(1e-3, "temperature learning rate")
    init_alpha: float = setting(1.0, "initial entropy temperature")
    learn_alpha: bool = setting(True, "tune the temperature towards the target entropy")
    target_entropy: Optional[float] = setting(
        None, "target entropy (none: the policy family's default times target_entropy_scale: "
        "-act_dim for continuous actions, 0.25 log n for n discrete ones)")
    target_entropy_scale: float = setting(
        1.0, "multiplies the default target entropy when target_entropy is none (rlpd, SimBa, "
        "BRO: 0.5, i.e. -act_dim / 2)")
    num_target_critics: Optional[int] = setting(
        None, "target critics the TD target takes the min over, drawn at random from the N "
        "(REDQ's M; none: min(2, N))")
    actor_q_reduction: str = setting(
        "min", "how the actor loss combines the critics: min or mean")
    target_q_reduction: str = setting(
        "min", "how the TD target combines the target critics (a random num_target_critics of "
        "them): min (SAC, REDQ) or mean (BRO)")
    policy_delay: int = setting(
        1, "critic steps per actor and temperature step (with --utd a multiple of it: that many "
        "critic steps, then one actor step on the last batch)")
    target_update_every: int = setting(
        1, "gradient steps between the target networks' polyak averages (SB3's "
        "target_update_interval; DrQ: 2)")
    max_grad_norm: Optional[float] = setting(
        None, "clip each network's gradient to this global norm (none: no clipping)")
    weight_decay: float = setting(0.0, "decoupled (AdamW) weight decay (0: Adam)")
    weight_decay_on: str = setting(
        "weights", "parameters weight decay applies to: weights (>= 2 dims: not biases nor "
        "normalisation scales) or all")
    adam_betas: Tuple[float, ...] = setting((0.9, 0.999), "Adam's beta1 beta2")
    alpha_adam_betas: Tuple[float, ...] = setting(
        (), "the temperature's Adam beta1 beta2 (none: adam_betas)")
    adam_eps: float = setting(1e-8, "Adam's epsilon")
    lr_decay_to: float = setting(
        1.0, "the actor's, critics' and temperature's learning rates decay linearly to this "
        "fraction of their values over lr_decay_steps steps of their optimisers, then stay (1: "
        "constant; SimbaV2: 0.5)")
    lr_decay_steps: int = setting(
        1_000_000, "optimiser steps the learning rates take to decay to lr_decay_to of their "
        "values (SimbaV2: its run's gradient steps)")
    lr_decay_shape: str = setting(
        "linear", "how the learning rates decay to lr_decay_to: linear (SimbaV2) or cosine "
        "(FlashSAC)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class NormalizationSettings:
    """Running statistics of observations and returns."""

    GROUP: ClassVar[str] = "normalisation"
    normalize_obs: bool = setting(
        False, "normalise observations by their running mean and std (kept in the agent's state "
        "and checkpoints, applied when acting, training and in exports)")
    scale_rewards: bool = setting(
        False, "divide rewards by the running std of the discounted return (as SB3's "
        "VecNormalize)")
    return_bound: Optional[float] = setting(
        None, "with scale_rewards: divide rewards by at least the largest |discounted return| "
        "seen over this bound, so that scaled returns stay within it (SimbaV2: 5, its critics' "
        "support; none: the std alone)")
