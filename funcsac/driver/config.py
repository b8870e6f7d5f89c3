"""The run configuration, ``TrainConfig``: the driver's settings and the agent's ``SACConfig``
fields, each with its default and its help (the command line's flags are made from them)."""
from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Optional, Tuple

import torch

from ..config import SACConfig
from ..networks import NETWORKS
from ..registry import algorithm_help
from ..state import HParams
from .envs.make import Pixels
from .validate import check_train_config

# SACConfig fields that come from the environment or are code, not settings (device and dtype are
# run settings, as strings)
_AGENT_EXCLUDED = {"obs_dim", "act_dim", "actor_factory", "critic_factory", "device", "dtype",
                   "policy", "image_shape", "state_dim", "encoder_factory"}
AGENT_FIELDS = [f for f in dataclasses.fields(SACConfig) if f.name not in _AGENT_EXCLUDED]

# settings a resumed run may change: its length, logging, the permission to learn from another
# environment's data, and the dynamic hyperparameters (whose new values replace the checkpointed
# ones)
RESUME_MAY_CHANGE = ({"total_steps", "eval_every", "eval_episodes", "checkpoint_every",
                      "log_every", "compile", "compile_in_background", "progress",
                      "wandb_project", "wandb_mode", "offline_any_env"} | set(HParams._fields))


def setting(default, help: str):
    """A ``TrainConfig`` field: its default and its help."""
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything a training run needs: the run's settings, then every settable ``SACConfig``
    field (same names and defaults). One env step means one step of each of the ``num_envs``.
    Invalid values raise ``ValueError`` naming the field."""

    # the run
    env_id: str = setting("Pendulum-v1", "gymnasium environment id (Box or Discrete actions, "
                          "flat Box observations, or rendered frames with pixels)")
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
    num_envs: int = setting(1, "parallel environments per agent")
    async_envs: bool = setting(
        False,
        "run the environments in subprocesses (exact resume needs sync envs)")
    autoreset_mode: str = setting(
        "same-step",
        "vector env autoreset: same-step (final_obs in infos) or next-step (gymnasium's default; "
        "the reset step is skipped)")
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
    action_repeat: int = setting(
        1,
        "with pixels: each action applied this many env steps, rewards summed (DrQ: 2 to 8); "
        "total_steps counts the agent's steps")
    image_features: int = setting(
        50, "with pixels: the encoder's features, which the actor and the critics take")
    buffer_size: int = setting(1_000_000, "replay buffer capacity in transitions")
    batch_size: int = setting(256, "transitions per gradient step")
    learning_starts: int = setting(
        5000,
        "environment steps of uniform random actions before training")
    utd: int = setting(1, "gradient steps per environment step (update-to-data ratio)")
    reset_every: int = setting(
        0,
        "environment steps between resets of every agent's networks, targets, optimizer moments "
        "and temperature, as BRO does (funcsac.reset_params; 0: never)")
    n_step: int = setting(
        1,
        "environment steps per transition: n-step returns sum_k gamma^k r_k, bootstrapped with "
        "gamma^n, cut at episode ends")
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
    eval_every: int = setting(5000, "environment steps between evaluations (0: only at the end)")
    eval_episodes: int = setting(10, "deterministic-policy episodes per evaluation")
    checkpoint_every: int = setting(
        5000,
        "environment steps between checkpoints (0: only at the end)")
    log_every: int = setting(1000, "environment steps between rows of metrics.csv")
    compile: bool = setting(
        True,
        "compile the update (fullgraph, ahead of time); kept in the compile store, so a later run "
        "of the same configuration loads it in about a second")
    compile_in_background: bool = setting(
        True,
        "with compile, when the compile store lacks the update: train eagerly while a child "
        "process compiles it, then switch (the same numbers up to rounding, the switching step "
        "set by the compile's speed); false: wait for the compile (bitwise-repeatable runs)")
    device: str = setting("cpu", "torch device for the agent and the replay buffer")
    dtype: str = setting("float32", "floating dtype of the agent (float32 or float64)")
    progress: bool = setting(True, "show a progress bar")
    wandb_project: str = setting(
        "",
        "also log to this Weights & Biases project (needs funcsac[wandb]; empty: no W&B)")
    wandb_mode: str = setting(
        "online",
        "W&B mode: online, or offline (synced later with `wandb sync`)")
    # the agent: SACConfig's settable fields, with its defaults
    hidden_sizes: Tuple[int, ...] = setting(
        SACConfig.hidden_sizes,
        "hidden layer widths of each critic (and of the actor, unless actor_hidden_sizes); with "
        "network simba or bronet one residual block per entry, all of the same width")
    actor_hidden_sizes: Tuple[int, ...] = setting(
        SACConfig.actor_hidden_sizes,
        "hidden layer widths of the actor (none given: hidden_sizes)")
    network: str = setting(SACConfig.network, "architecture of the actor and the critics")
    num_critics: int = setting(SACConfig.num_critics, "critics in the ensemble (N)")
    num_target_critics: Optional[int] = setting(
        SACConfig.num_target_critics,
        "target critics the TD target takes the min over, drawn at random from the N (REDQ's M; "
        "none: min(2, N))")
    gamma: float = setting(SACConfig.gamma, "discount factor")
    tau: float = setting(
        SACConfig.tau,
        "polyak rate of the target critics, every gradient step (algorithms with target critics)")
    actor_lr: float = setting(SACConfig.actor_lr, "actor learning rate")
    critic_lr: float = setting(SACConfig.critic_lr, "critic learning rate")
    alpha_lr: float = setting(SACConfig.alpha_lr, "temperature learning rate")
    init_alpha: float = setting(SACConfig.init_alpha, "initial entropy temperature")
    learn_alpha: bool = setting(
        SACConfig.learn_alpha,
        "tune the temperature towards the target entropy")
    target_entropy: Optional[float] = setting(
        SACConfig.target_entropy,
        "target entropy (none: the policy family's default times target_entropy_scale: -act_dim, "
        "or 0.89 log n for n discrete actions)")
    target_entropy_scale: float = setting(
        SACConfig.target_entropy_scale,
        "multiplies the default target entropy when target_entropy is none (rlpd, SimBa, BRO: "
        "0.5, i.e. -act_dim / 2)")
    policy_delay: int = setting(
        SACConfig.policy_delay,
        "critic steps per actor and temperature step (with --utd a multiple of it: that many "
        "critic steps, then one actor step on the last batch)")
    target_update_every: int = setting(
        SACConfig.target_update_every,
        "gradient steps between the target networks' polyak averages (SB3's "
        "target_update_interval; DrQ: 2)")
    max_grad_norm: Optional[float] = setting(
        SACConfig.max_grad_norm,
        "clip each network's gradient to this global norm (none: no clipping)")
    weight_decay: float = setting(SACConfig.weight_decay, "decoupled (AdamW) weight decay")
    weight_decay_on: str = setting(
        SACConfig.weight_decay_on,
        "parameters weight decay applies to: weights (>= 2 dims: not biases nor normalisation "
        "scales) or all")
    adam_betas: Tuple[float, ...] = setting(SACConfig.adam_betas, "Adam's beta1 beta2")
    alpha_adam_betas: Tuple[float, ...] = setting(
        SACConfig.alpha_adam_betas,
        "the temperature's Adam beta1 beta2 (none: adam_betas)")
    adam_eps: float = setting(SACConfig.adam_eps, "Adam's epsilon")
    log_std_min: float = setting(
        SACConfig.log_std_min,
        "lower bound of the policy's log standard deviation")
    log_std_max: float = setting(
        SACConfig.log_std_max,
        "upper bound of the policy's log standard deviation")
    actor_q_reduction: str = setting(
        SACConfig.actor_q_reduction,
        "how the actor loss combines the critics: min or mean")
    critic_dropout: float = setting(
        SACConfig.critic_dropout,
        "dropout rate in the critics, masks drawn from the agent's key (DroQ: 0.01)")
    critic_layer_norm: bool = setting(
        SACConfig.critic_layer_norm,
        "LayerNorm after each hidden layer of the critics (DroQ)")
    critic_batch_renorm: bool = setting(
        SACConfig.critic_batch_renorm,
        "batch renormalisation of the critics' input and hidden layers (CrossQ)")
    actor_batch_renorm: bool = setting(
        SACConfig.actor_batch_renorm,
        "batch renormalisation of the actor's input and hidden layers, in training mode in the "
        "actor's step (CrossQ)")
    normalize_obs: bool = setting(
        SACConfig.normalize_obs,
        "normalise observations by their running mean and std (kept in the agent's state and "
        "checkpoints, applied when acting, training and in exports)")
    image_pad: int = setting(
        SACConfig.image_pad,
        "with pixels: each gradient step shifts the frames by up to this many pixels (DrQ; 0: "
        "none)")
    encoder_tau_scale: float = setting(
        SACConfig.encoder_tau_scale,
        "with pixels: the target encoder's polyak rate is tau times this (DrQ: 5, 0.05 beside "
        "the critics' 0.01)")
    scale_rewards: bool = setting(
        SACConfig.scale_rewards,
        "divide rewards by the running std of the discounted return (as SB3's VecNormalize)")
    algorithm: str = setting(SACConfig.algorithm, "the losses update trains with")
    num_quantiles: int = setting(
        SACConfig.num_quantiles,
        "quantiles of the return each critic outputs (K), for an algorithm with quantile critics")
    drop_quantiles: int = setting(
        SACConfig.drop_quantiles,
        "top quantiles per critic dropped from the pooled target (d; the target keeps N * (K - d) "
        "of the N * K), for an algorithm with quantile critics")

    def __post_init__(self):
        # lists from a config file become tuples (SACConfig rejects other types)
        for f in dataclasses.fields(self):
            if isinstance(f.default, tuple) and isinstance(getattr(self, f.name), list):
                object.__setattr__(self, f.name, tuple(getattr(self, f.name)))
        check_train_config(self)

    def sac_config(self, obs_dim: int, act_dim: int, policy: str = "tanh_gaussian",
                   image_shape: tuple = (), state_dim: int = 0) -> SACConfig:
        """The agent's SACConfig for an environment's observation and action sizes and the
        policy family its action space needs (``EnvSpec.policy``); with an ``image_shape``, the
        encoder's ``image_features`` take the place of ``obs_dim`` (and a ``state_dim`` vector
        goes beside them)."""
        fields = {f.name: getattr(self, f.name) for f in AGENT_FIELDS}
        return SACConfig(obs_dim=self.image_features if image_shape else obs_dim,
                         act_dim=act_dim, policy=policy, device=self.device,
                         dtype=getattr(torch, self.dtype), image_shape=image_shape,
                         state_dim=state_dim, **fields)

    def agent_config(self, spec) -> SACConfig:
        """The agent's SACConfig for an environment's spaces (an ``EnvSpec``)."""
        return self.sac_config(spec.obs_dim, spec.act_dim, spec.policy, spec.image_shape,
                               spec.state_dim)

    @property
    def pixel_settings(self):
        """The frames a ``pixels`` run observes (``envs.make.Pixels``), else ``None``."""
        return (Pixels(self.image_size, self.frame_stack, self.pixels_with_state,
                       self.action_repeat) if self.pixels else None)

    @property
    def offline_rows(self) -> int:
        """The rows of each batch drawn from the offline data: ``round(batch_size *
        offline_ratio)``."""
        return round(self.batch_size * self.offline_ratio)

    def to_dict(self) -> dict:
        """Plain values (JSON-serialisable) by field name."""
        return dataclasses.asdict(self)

    @classmethod
    def field_defaults(cls) -> dict:
        """Every field's default value, by name."""
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        """A config from plain values; unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
        return cls(**values)


def help_text(name: str) -> str:
    """The command-line help of a ``TrainConfig`` field; the algorithms' and the networks' name
    what is registered now."""
    text = next(f for f in dataclasses.fields(TrainConfig) if f.name == name).metadata["help"]
    if name == "algorithm":
        return f"{text}, one of: {algorithm_help()}"
    if name == "network":
        return f"{text}, one of: {', '.join(NETWORKS)}"
    return text


def load_config_file(path) -> dict:
    """Settings from a TOML or JSON file (flat keys, as on the command line with ``_``)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist")
    text = path.read_bytes()
    try:
        values = tomllib.loads(text.decode()) if path.suffix == ".toml" else json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"config file {path} is not valid {path.suffix[1:].upper()}: {e}") from e
    return {k.replace("-", "_"): v for k, v in values.items()}
