"""The run configuration: the agent's SACConfig fields plus the driver's own settings."""
from __future__ import annotations

import dataclasses
import json
import tomllib
import typing
from pathlib import Path
import torch

from ..config import SACConfig, check_device
from ..registry import algorithm_help
from ..state import HParams
from .run.agents import parse_sweep

# SACConfig fields that come from the environment or are code, not settings
_AGENT_EXCLUDED = {"obs_dim", "act_dim", "actor_factory", "critic_factory", "device", "dtype",
                   "policy"}
AGENT_FIELDS = [f for f in dataclasses.fields(SACConfig) if f.name not in _AGENT_EXCLUDED]

# settings a resumed run may change: its length, logging, the permission to learn from another
# environment's data, and the dynamic hyperparameters (whose new values replace the checkpointed
# ones)
RESUME_MAY_CHANGE = ({"total_steps", "eval_every", "eval_episodes", "checkpoint_every",
                      "log_every", "compile", "compile_in_background", "progress",
                      "wandb_project", "wandb_mode", "offline_any_env"} | set(HParams._fields))


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """The driver's settings; one env step means one step of each of the ``num_envs``."""

    env_id: str = "Pendulum-v1"
    total_steps: int = 15_000
    seed: int = 1
    num_seeds: int = 1
    sweep: str = ""
    num_envs: int = 1
    async_envs: bool = False
    autoreset_mode: str = "same-step"
    buffer_size: int = 1_000_000
    batch_size: int = 256
    learning_starts: int = 5_000
    utd: int = 1
    reset_every: int = 0
    n_step: int = 1
    prioritized: bool = False
    priority_alpha: float = 0.6
    priority_beta: float = 0.4
    priority_epsilon: float = 1e-6
    offline_data: str = ""
    offline_ratio: float = 0.5
    offline_any_env: bool = False
    eval_every: int = 5_000
    eval_episodes: int = 10
    checkpoint_every: int = 5_000
    log_every: int = 1_000
    compile: bool = True
    compile_in_background: bool = True
    device: str = "cpu"
    dtype: str = "float32"
    progress: bool = True
    wandb_project: str = ""
    wandb_mode: str = "online"


_HELP = {
    "env_id": "gymnasium environment id (continuous Box actions, flat Box observations)",
    "total_steps": "environment steps in all (each vector step counts num_envs)",
    "seed": "seed for the environments, the replay sampling and the agent",
    "num_seeds": "independent agents with seeds seed, seed+1, ... trained by one vmapped update",
    "sweep": "NAME=V1,V2,...: one agent per value (times num_seeds) of a dynamic hyperparameter "
             "(actor_lr, critic_lr, alpha_lr, tau, gamma, target_entropy)",
    "num_envs": "parallel environments per agent",
    "async_envs": "run the environments in subprocesses (exact resume needs sync envs)",
    "autoreset_mode": "vector env autoreset: same-step (final_obs in infos) or next-step "
                      "(gymnasium's default; the reset step is skipped)",
    "buffer_size": "replay buffer capacity in transitions",
    "batch_size": "transitions per gradient step",
    "learning_starts": "environment steps of uniform random actions before training",
    "utd": "gradient steps per environment step (update-to-data ratio)",
    "reset_every": "environment steps between resets of every agent's networks, targets, "
                   "optimizer moments and temperature, as BRO does (funcsac.reset_params; "
                   "0: never)",
    "n_step": "environment steps per transition: n-step returns sum_k gamma^k r_k, bootstrapped "
              "with gamma^n, cut at episode ends",
    "prioritized": "prioritized experience replay: rows drawn in proportion to "
                   "(|TD error| + epsilon)^alpha, importance-weighted in the critic loss",
    "priority_alpha": "prioritized replay: exponent of the priorities (0: uniform)",
    "priority_beta": "prioritized replay: importance-weight exponent at the start, annealed "
                     "linearly to 1 at the total_steps the run began with (a resume keeps it)",
    "priority_epsilon": "prioritized replay: added to |TD error| so no row has priority 0",
    "offline_data": "offline transitions to learn from besides the online ones (RLPD): a .npz "
                    "dataset (funcsac collect) or a local Minari dataset directory; empty: none",
    "offline_ratio": "with offline_data: the fraction of each batch drawn from it (the rest from "
                     "the online replay buffer), in (0, 1)",
    "offline_any_env": "with offline_data: learn from a dataset recorded on another environment "
                       "than env_id (of the same sizes and action bounds); refused otherwise",
    "eval_every": "environment steps between evaluations (0: only at the end)",
    "eval_episodes": "deterministic-policy episodes per evaluation",
    "checkpoint_every": "environment steps between checkpoints (0: only at the end)",
    "log_every": "environment steps between rows of metrics.csv",
    "compile": "compile the update (fullgraph, ahead of time); kept in the compile store, so a "
               "later run of the same configuration loads it in about a second",
    "compile_in_background": "with compile, when the compile store lacks the update: train "
                             "eagerly while a child process compiles it, then switch (the same "
                             "numbers up to rounding, the switching step set by the compile's "
                             "speed); false: wait for the compile (bitwise-repeatable runs)",
    "device": "torch device for the agent and the replay buffer",
    "dtype": "floating dtype of the agent (float32 or float64)",
    "progress": "show a progress bar",
    "wandb_project": "also log to this Weights & Biases project (needs funcsac[wandb]; empty: "
                     "no W&B)",
    "wandb_mode": "W&B mode: online, or offline (synced later with `wandb sync`)",
    "hidden_sizes": "hidden layer widths of each critic (and of the actor, unless "
                    "actor_hidden_sizes); with network simba or bronet one residual block per "
                    "entry, all of the same width",
    "actor_hidden_sizes": "hidden layer widths of the actor (none given: hidden_sizes)",
    "network": "architecture of the actor and the critics: mlp, simba (SimBa's residual blocks) "
               "or bronet (BRO's)",
    "num_critics": "critics in the ensemble (N)",
    "num_target_critics": "target critics the TD target takes the min over, drawn at random "
                          "from the N (REDQ's M; none: min(2, N))",
    "gamma": "discount factor",
    "tau": "polyak rate of the target critics, every gradient step (algorithms with target "
           "critics)",
    "actor_lr": "actor learning rate",
    "critic_lr": "critic learning rate",
    "alpha_lr": "temperature learning rate",
    "init_alpha": "initial entropy temperature",
    "learn_alpha": "tune the temperature towards the target entropy",
    "target_entropy": "target entropy (none: the policy family's default times "
                      "target_entropy_scale: -act_dim, or 0.89 log n for n discrete actions)",
    "target_entropy_scale": "multiplies the default target entropy when target_entropy is none "
                            "(rlpd, SimBa, BRO: 0.5, i.e. -act_dim / 2)",
    "policy_delay": "critic steps per actor and temperature step (with --utd a multiple of it: "
                    "that many critic steps, then one actor step on the last batch)",
    "max_grad_norm": "clip each network's gradient to this global norm (none: no clipping)",
    "weight_decay": "decoupled (AdamW) weight decay",
    "weight_decay_on": "parameters weight decay applies to: weights (>= 2 dims: not biases nor "
                       "normalisation scales) or all",
    "adam_betas": "Adam's beta1 beta2",
    "alpha_adam_betas": "the temperature's Adam beta1 beta2 (none: adam_betas)",
    "adam_eps": "Adam's epsilon",
    "log_std_min": "lower bound of the policy's log standard deviation",
    "log_std_max": "upper bound of the policy's log standard deviation",
    "num_quantiles": "quantiles of the return each critic outputs (K), for an algorithm with "
                     "quantile critics",
    "drop_quantiles": "top quantiles per critic dropped from the pooled target (d; the target "
                      "keeps N * (K - d) of the N * K), for an algorithm with quantile critics",
    "actor_q_reduction": "how the actor loss combines the critics: min or mean",
    "critic_dropout": "dropout rate in the critics, masks drawn from the agent's key (DroQ: 0.01)",
    "critic_layer_norm": "LayerNorm after each hidden layer of the critics (DroQ)",
    "critic_batch_renorm": "batch renormalisation of the critics' input and hidden layers "
                           "(CrossQ)",
    "actor_batch_renorm": "batch renormalisation of the actor's input and hidden layers, in "
                          "training mode in the actor's step (CrossQ)",
    "normalize_obs": "normalise observations by their running mean and std (kept in the agent's "
                     "state and checkpoints, applied when acting, training and in exports)",
    "scale_rewards": "divide rewards by the running std of the discounted return (as SB3's "
                     "VecNormalize)",
}


def help_text(name: str) -> str:
    """The command-line help of a config field (the algorithms' from the registry)."""
    if name == "algorithm":
        return f"the losses update trains with, one of: {algorithm_help()}"
    return _HELP[name]


class _TrainConfigMethods:
    """Validation and conversions of ``TrainConfig``."""

    def __post_init__(self):
        # lists from a config file become tuples (SACConfig rejects other types)
        for f in dataclasses.fields(self):
            if isinstance(f.default, tuple) and isinstance(getattr(self, f.name), list):
                object.__setattr__(self, f.name, tuple(getattr(self, f.name)))
        for name in ("env_id", "sweep", "autoreset_mode", "device", "dtype", "wandb_project",
                     "wandb_mode", "offline_data"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"TrainConfig.{name} must be a string, got "
                                 f"{getattr(self, name)!r}")
        for name in ("async_envs", "compile", "compile_in_background", "progress", "prioritized",
                     "offline_any_env"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"TrainConfig.{name} must be true or false, got "
                                 f"{getattr(self, name)!r}")
        if not self.env_id:
            raise ValueError("TrainConfig.env_id must name a gymnasium environment, got ''")
        check_device(self.device, "TrainConfig.device")
        parse_sweep(self.sweep)
        for name in ("total_steps", "num_seeds", "num_envs", "buffer_size", "batch_size", "utd",
                     "eval_episodes", "log_every", "n_step"):
            _positive_int(name, getattr(self, name))
        for name in ("learning_starts", "eval_every", "checkpoint_every", "seed", "reset_every"):
            _positive_int(name, getattr(self, name), minimum=0)
        if self.autoreset_mode not in ("same-step", "next-step"):
            raise ValueError("TrainConfig.autoreset_mode must be 'same-step' or 'next-step', "
                             f"got {self.autoreset_mode!r}")
        bad = set(self.wandb_project) & set("/\\#?%:")
        if bad or len(self.wandb_project) > 128:
            raise ValueError("TrainConfig.wandb_project must be a W&B project name (at most 128 "
                             f"characters, none of / \\ # ? % :), got {self.wandb_project!r}")
        if self.wandb_mode not in ("online", "offline"):
            raise ValueError("TrainConfig.wandb_mode must be 'online' or 'offline', got "
                             f"{self.wandb_mode!r}")
        for name, low, high in (("priority_alpha", 0.0, 10.0), ("priority_beta", 0.0, 1.0),
                                ("priority_epsilon", 1e-12, 1.0)):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
                    low <= value <= high):
                raise ValueError(f"TrainConfig.{name} must be a number in [{low}, {high}], got "
                                 f"{value!r}")
        _check_offline(self)
        if self.dtype not in ("float32", "float64"):
            raise ValueError("TrainConfig.dtype must be 'float32' or 'float64', got "
                             f"{self.dtype!r}")
        self.sac_config(1, 1)  # validates the agent's fields
        if self.batch_size > self.buffer_size:
            raise ValueError(f"TrainConfig.batch_size ({self.batch_size}) must not exceed "
                             f"buffer_size ({self.buffer_size})")

    def sac_config(self, obs_dim: int, act_dim: int, policy: str = "tanh_gaussian") -> SACConfig:
        """The agent's SACConfig for an environment's observation and action sizes and the
        policy family its action space needs (``EnvSpec.policy``)."""
        fields = {f.name: getattr(self, f.name) for f in AGENT_FIELDS}
        return SACConfig(obs_dim=obs_dim, act_dim=act_dim, policy=policy, device=self.device,
                         dtype=getattr(torch, self.dtype), **fields)

    def to_dict(self) -> dict:
        """Plain values (JSON-serialisable) by field name."""
        return dataclasses.asdict(self)

    @classmethod
    def field_defaults(cls) -> dict:
        """Every field's default value, by name."""
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def from_dict(cls, values: dict):
        """A config from plain values; unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
        return cls(**values)


_SAC_TYPES = typing.get_type_hints(SACConfig)
TrainConfig = dataclasses.make_dataclass(
    "TrainConfig",
    [(f.name, _SAC_TYPES[f.name], dataclasses.field(default=f.default)) for f in AGENT_FIELDS],
    bases=(RunSettings, _TrainConfigMethods), frozen=True)
TrainConfig.__module__ = __name__
TrainConfig.__doc__ = """Everything a training run needs: the run settings plus every settable
SACConfig field (same names and defaults)."""


def _check_offline(config) -> None:
    """``offline_ratio`` in (0, 1); with ``offline_data``, a split that leaves rows to both parts
    of a batch, and no prioritized replay. Whether the dataset exists and fits the environment is
    checked when a run starts (a finished run stays loadable without it)."""
    ratio = config.offline_ratio
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0.0 < ratio < 1.0:
        raise ValueError("TrainConfig.offline_ratio must be a number in (0, 1) (exclusive), got "
                         f"{ratio!r}")
    if not config.offline_data:
        return
    if "\0" in config.offline_data:
        raise ValueError("TrainConfig.offline_data must be a path (of a .npz file or a Minari "
                         f"dataset directory), got {config.offline_data!r}")
    if config.prioritized:
        raise ValueError("TrainConfig.offline_data cannot be combined with prioritized=True: "
                         "prioritized replay applies to online data only; mixing priorities "
                         "with uniformly drawn offline rows is not supported")
    offline = offline_rows(config.batch_size, ratio)
    if not 0 < offline < config.batch_size:
        raise ValueError(f"TrainConfig.offline_ratio {ratio} of batch_size {config.batch_size} "
                         f"gives {offline} offline rows per batch; each batch needs at least one "
                         "offline and one online row")


def offline_rows(batch_size: int, offline_ratio: float) -> int:
    """The rows of each batch drawn from the offline data: ``round(batch_size * offline_ratio)``."""
    return round(batch_size * offline_ratio)


def _positive_int(name: str, value, minimum: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"TrainConfig.{name} must be an integer >= {minimum}, got {value!r}")


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
