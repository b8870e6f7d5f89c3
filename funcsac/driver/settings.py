"""The run's settings, by concern: each group a frozen dataclass of fields with a default and a
one-line help, which ``TrainConfig`` inherits beside the agent's groups (``funcsac.settings``).
``GROUP`` names the group in the help."""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Optional, Tuple

from ..registry import setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunSettings:
    """The run: its length, seeds, device and compile."""

    GROUP: ClassVar[str] = "run"
    total_steps: int = setting(
        15_000,
        "environment steps in all (each vector step counts num_envs)")
    seed: int = setting(1, "seed for the environments, the replay sampling and the agent")
    num_seeds: int = setting(
        1,
        "independent agents with seeds seed, seed+1, ... trained by one vmapped update")
    sweep: str = setting(
        "",
        "NAME=V1,V2,...: one agent per value (times num_seeds) of a dynamic hyperparameter "
        "(actor_lr, critic_lr, alpha_lr, tau, gamma, target_entropy)")
    device: str = setting("cpu", "torch device for the agent and the replay buffer")
    dtype: str = setting("float32", "floating dtype of the agent (float32 or float64)")
    compile: bool = setting(
        True,
        "compile the update (fullgraph, ahead of time); kept in the compile store, so a later run "
        "of the same configuration loads it in about two seconds")
    compile_in_background: bool = setting(
        True,
        "with compile, when the compile store lacks the update: train eagerly while a child "
        "process compiles it, then switch (the same numbers up to rounding, the switching step "
        "set by the compile's speed); false: wait for the compile (bitwise-repeatable runs)")
    reset_every: int = setting(
        0,
        "environment steps between resets of every agent's networks, targets, optimizer moments "
        "and temperature (funcsac.reset_params; 0: never)")
    reset_at: Tuple[int, ...] = setting(
        (), "environment steps at which every agent is reset as reset_every resets it (BRO: "
        "15000 50000 250000 500000 ...)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnvSettings:
    """The environments the agents act in."""

    GROUP: ClassVar[str] = "environment"
    env_id: str = setting("Pendulum-v1", "gymnasium environment id (Box or Discrete actions, "
                          "flat Box observations, or rendered frames with pixels)")
    num_envs: int = setting(1, "parallel environments per agent")
    async_envs: bool = setting(
        False,
        "run the environments in subprocesses (exact resume needs sync envs)")
    autoreset_mode: str = setting(
        "same-step",
        "vector env autoreset: same-step (final_obs in infos) or next-step (gymnasium's default; "
        "the reset step is skipped)")
    action_repeat: Optional[int] = setting(
        None,
        "each action applied this many env steps, rewards summed; total_steps counts the "
        "agent's steps (default: the references' for the task: DeepMind Control 2 from states "
        "(SimbaV2), DrQ's 2, 4 or 8 from pixels; else 1)")
    pixels: bool = setting(
        False,
        "observe rendered frames instead of the env's observations: image_size x image_size "
        "RGB, the last frame_stack frames stacked (uint8), through DrQ's encoder")
    pixels_with_state: bool = setting(
        False,
        "with pixels: the env's own observation beside the frames (dicts of pixels and state; "
        "the actor and the critics take the encoder's features and the state)")
    image_size: int = setting(84, "with pixels: the side of a frame in pixels")
    frame_stack: int = setting(3, "with pixels: frames stacked into one observation")
    image_features: int = setting(
        50, "with pixels: the encoder's features, which the actor and the critics take")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExplorationSettings:
    """How the agents explore before and while they learn."""

    GROUP: ClassVar[str] = "exploration"
    learning_starts: Optional[int] = setting(
        None,
        "environment steps of uniform random actions before training (none: the policy "
        "family's default, 5000 for continuous actions, 2000 for discrete ones)")
    noise_hold: Optional[float] = setting(
        None, "exploration: each draw of the policy's noise, and each random action before "
        "training, is held for n environment steps, P(n) ~ n^-noise_hold for n in "
        "1..noise_hold_max (0: a new draw every step; FlashSAC: 2; none: the policy family's "
        "default, 0 for continuous actions, 1 for discrete ones)")
    noise_hold_max: Optional[int] = setting(
        None, "the longest hold of an exploration noise draw (none: the policy family's "
        "default, 16 for continuous actions, 32 for discrete ones)")
    hold_random_actions: bool = setting(
        True, "whether noise_hold holds the random actions before training too (FlashSAC: no, "
        "a new uniform action every step)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplaySettings:
    """The replay buffer, its batches and the data it draws from."""

    GROUP: ClassVar[str] = "replay"
    buffer_size: int = setting(1_000_000, "replay buffer capacity in transitions")
    batch_size: int = setting(256, "transitions per gradient step")
    utd: int = setting(1, "gradient steps per environment step (update-to-data ratio)")
    gradient_steps: Optional[int] = setting(
        None, "gradient steps of each agent per vector step of all its num_envs environments, "
        "below or above one per env step (FlashSAC on GPU simulators: 2 per step of 1,024 "
        "envs); none: utd x num_envs")
    n_step: Optional[int] = setting(
        None,
        "environment steps per transition: n-step returns sum_k gamma^k r_k, bootstrapped with "
        "gamma^n, cut at episode ends (none: the policy family's default, 1 for continuous "
        "actions, 3 for discrete ones; 1 for image observations)")
    prioritized: bool = setting(
        False,
        "prioritized experience replay: rows drawn in proportion to (|TD error| + epsilon)^alpha, "
        "importance-weighted in the critic loss")
    priority_alpha: float = setting(
        0.6,
        "prioritized replay: exponent of the priorities (0: uniform)")
    priority_beta: float = setting(
        0.4,
        "prioritized replay: importance-weight exponent at the start, annealed linearly to 1 at "
        "the total_steps the run began with (a resume keeps it)")
    priority_epsilon: float = setting(
        1e-06,
        "prioritized replay: added to |TD error| so no row has priority 0")
    offline_data: str = setting(
        "",
        "offline transitions to learn from besides the online ones (RLPD): a .npz dataset "
        "(funcsac collect) or a local Minari dataset directory; empty: none")
    offline_ratio: float = setting(
        0.5,
        "with offline_data: the fraction of each batch drawn from it (the rest from the online "
        "replay buffer), in (0, 1)")
    offline_any_env: bool = setting(
        False,
        "with offline_data: learn from a dataset recorded on another environment than env_id (of "
        "the same sizes and action bounds); refused otherwise")


@dataclasses.dataclass(frozen=True, kw_only=True)
class FactorySettings:
    """Networks built by the user's own code."""

    GROUP: ClassVar[str] = "network"
    actor_factory: str = setting(
        "", "MODULE:FUNCTION or FILE.py:FUNCTION building the actor, "
        "FUNCTION(input_dim, act_dim, hidden_sizes) (SACConfig.actor_factory; '': the network's)")
    critic_factory: str = setting(
        "", "MODULE:FUNCTION or FILE.py:FUNCTION building one critic, "
        "FUNCTION(input_dim, act_dim, hidden_sizes) (SACConfig.critic_factory; '': the network's)")
    encoder_factory: str = setting(
        "", "with pixels: MODULE:FUNCTION or FILE.py:FUNCTION building the encoder, "
        "FUNCTION(image_shape, features) (SACConfig.encoder_factory; '': the encoder's)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordSettings:
    """Evaluations, checkpoints and logs."""

    GROUP: ClassVar[str] = "record"
    eval_every: int = setting(5000, "environment steps between evaluations (0: only at the end)")
    eval_episodes: int = setting(10, "deterministic-policy episodes per evaluation")
    checkpoint_every: int = setting(
        5000,
        "environment steps between checkpoints (0: only at the end)")
    log_every: int = setting(1000, "environment steps between rows of metrics.csv")
    progress: bool = setting(True, "show a progress bar")
    tensorboard: bool = setting(
        False, "also write TensorBoard event files to RUN_DIR/tensorboard (needs "
        "funcsac[tensorboard]; view with tensorboard --logdir RUN_DIR)")
    wandb_project: str = setting(
        "",
        "also log to this Weights & Biases project (needs funcsac[wandb]; empty: no W&B)")
    wandb_mode: str = setting(
        "online",
        "W&B mode: online, or offline (synced later with `wandb sync`)")
