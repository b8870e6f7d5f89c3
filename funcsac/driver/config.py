"""The run configuration, ``TrainConfig``: the run's settings (``RunSettings``), then the
agent's shared settings (``SACConfig``'s fields with help), then its variants' options by flat
name; each with its default and its help, from which the command line's flags are made."""
from __future__ import annotations

import dataclasses
import difflib
import json
import tomllib
import typing
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import torch

from .. import registry
from ..config import SACConfig
from ..registry import POLICIES, ROOMS, room_help, setting
from ..state import HParams
from .envs.dmc import reference_action_repeat
from .envs.make import Pixels
from .factories import FACTORY_FIELDS, import_factory
from .validate import check_train_config

# the agent's shared settings: SACConfig's fields with help (the rest come from the environment,
# are code, or are the run's: device and dtype, as strings)
AGENT_FIELDS = [f for f in dataclasses.fields(SACConfig) if "help" in f.metadata]

# settings a config may leave to the environment (None: the policy family's default,
# ``TrainConfig.for_env``)
ENV_SETTLED = ("n_step", "learning_starts", "noise_hold", "noise_hold_max", "action_repeat")
# settings a resumed run may change: its length, logging, the permission to learn from another
# environment's data, and the dynamic hyperparameters (whose new values replace the checkpointed
# ones)
RESUME_MAY_CHANGE = ({"total_steps", "eval_every", "eval_episodes", "checkpoint_every",
                      "log_every", "compile", "compile_in_background", "progress",
                      "tensorboard", "wandb_project", "wandb_mode", "offline_any_env"}
                     | set(HParams._fields))


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """The run's own settings, the first fields of ``TrainConfig``."""

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
    action_repeat: Optional[int] = setting(
        None,
        "each action applied this many env steps, rewards summed; total_steps counts the "
        "agent's steps (default: the references' for the task: DeepMind Control 2 from states "
        "(SimbaV2), DrQ's 2, 4 or 8 from pixels; else 1)")
    image_features: int = setting(
        50, "with pixels: the encoder's features, which the actor and the critics take")
    actor_factory: str = setting(
        "", "MODULE:FUNCTION or FILE.py:FUNCTION building the actor, "
        "FUNCTION(input_dim, act_dim, hidden_sizes) (SACConfig.actor_factory; '': the network's)")
    critic_factory: str = setting(
        "", "MODULE:FUNCTION or FILE.py:FUNCTION building one critic, "
        "FUNCTION(input_dim, act_dim, hidden_sizes) (SACConfig.critic_factory; '': the network's)")
    encoder_factory: str = setting(
        "", "with pixels: MODULE:FUNCTION or FILE.py:FUNCTION building the encoder, "
        "FUNCTION(image_shape, features) (SACConfig.encoder_factory; '': the encoder's)")
    buffer_size: int = setting(1_000_000, "replay buffer capacity in transitions")
    batch_size: int = setting(256, "transitions per gradient step")
    learning_starts: Optional[int] = setting(
        None,
        "environment steps of uniform random actions before training (none: the policy "
        "family's default, 5000 for continuous actions, 2000 for discrete ones)")
    utd: int = setting(1, "gradient steps per environment step (update-to-data ratio)")
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
    reset_every: int = setting(
        0,
        "environment steps between resets of every agent's networks, targets, optimizer moments "
        "and temperature (funcsac.reset_params; 0: never)")
    reset_at: Tuple[int, ...] = setting(
        (), "environment steps at which every agent is reset as reset_every resets it (BRO: "
        "15000 50000 250000 500000 ...)")
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
    eval_every: int = setting(5000, "environment steps between evaluations (0: only at the end)")
    eval_episodes: int = setting(10, "deterministic-policy episodes per evaluation")
    checkpoint_every: int = setting(
        5000,
        "environment steps between checkpoints (0: only at the end)")
    log_every: int = setting(1000, "environment steps between rows of metrics.csv")
    compile: bool = setting(
        True,
        "compile the update (fullgraph, ahead of time); kept in the compile store, so a later run "
        "of the same configuration loads it in about two seconds")
    compile_in_background: bool = setting(
        True,
        "with compile, when the compile store lacks the update: train eagerly while a child "
        "process compiles it, then switch (the same numbers up to rounding, the switching step "
        "set by the compile's speed); false: wait for the compile (bitwise-repeatable runs)")
    device: str = setting("cpu", "torch device for the agent and the replay buffer")
    dtype: str = setting("float32", "floating dtype of the agent (float32 or float64)")
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


def nearest_keys(unknown, known) -> str:
    """``"; did you mean ..."`` naming the known key nearest each unknown one that has a near one
    (``difflib``'s ratio at least 0.6), else ``""``."""
    near = {k: difflib.get_close_matches(k, known, n=1) for k in unknown}
    said = [f"{m[0]!r} for {k!r}" for k, m in near.items() if m]
    return f"; did you mean {', '.join(said)}?" if said else ""


def _fields_of(cls, names=None) -> list:
    """``(name, type, field)`` of a dataclass's fields (those in ``names``, if given), as
    ``dataclasses.make_dataclass`` takes them: the same defaults, help and resolved types."""
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name], dataclasses.field(default=f.default, metadata=f.metadata))
            for f in dataclasses.fields(cls) if names is None or f.name in names]


class _TrainConfigMethods:
    def __init__(self, *, options: Optional[dict] = None, **settings):
        """A config from settings by flat name: the fields, and the registered variants'
        options, given in ``options`` or beside the fields (``TrainConfig(num_quantiles=10)``);
        ``ValueError`` naming an unknown one. ``options`` then holds every option of the chosen
        variants, the defaults filled in."""
        fields = self.field_defaults()
        known = registry.option_fields()
        unknown = sorted(set(settings) - set(fields) - set(known))
        if unknown:
            raise ValueError(f"unknown config keys {unknown}"
                             f"{nearest_keys(unknown, [*fields, *known])}; `funcsac train "
                             "--help` lists every setting")
        for name, default in fields.items():
            object.__setattr__(self, name, settings.get(name, default))
        given = {**(options or {}), **{k: v for k, v in settings.items() if k in known}}
        object.__setattr__(self, "options", given)
        self.__post_init__()

    def __post_init__(self):
        # lists from a config file become tuples (SACConfig rejects other types)
        for f in dataclasses.fields(self):
            if isinstance(f.default, tuple) and isinstance(getattr(self, f.name), list):
                object.__setattr__(self, f.name, tuple(getattr(self, f.name)))
        object.__setattr__(self, "options", {k: tuple(v) if isinstance(v, list) else v
                                             for k, v in dict(self.options).items()})
        check_train_config(self)
        object.__setattr__(self, "options", self.sac_config(1, 1).option_settings())

    def sac_config(self, obs_dim: int, act_dim: int, policy: str = "tanh_gaussian",
                   image_shape: tuple = (), state_dim: int = 0) -> SACConfig:
        """The agent's SACConfig for an environment's observation and action sizes and the
        policy family its action space needs (``EnvSpec.policy``); with an ``image_shape``, the
        encoder's ``image_features`` take the place of ``obs_dim`` (and a ``state_dim`` vector
        goes beside them)."""
        fields = {f.name: getattr(self, f.name) for f in AGENT_FIELDS}
        fields.update({name: import_factory(getattr(self, name), name)
                       for name in FACTORY_FIELDS if getattr(self, name)})
        return SACConfig.of(obs_dim=self.image_features if image_shape else obs_dim,
                            act_dim=act_dim, policy=policy, device=self.device,
                            dtype=getattr(torch, self.dtype), image_shape=image_shape,
                            state_dim=state_dim, **fields, **self.options)

    def for_env(self, spec) -> "TrainConfig":
        """This config with the settings it leaves to the environment (``ENV_SETTLED``, those
        None) settled for ``spec`` (an ``EnvSpec``): the policy family's ``default_n_step`` (1
        for image observations), ``default_learning_starts`` and its noise holds, and the task's
        action repeat (``repeat``)."""
        family = POLICIES[spec.policy]
        defaults = {"n_step": 1 if spec.image_shape else family.default_n_step,
                    "learning_starts": family.default_learning_starts,
                    "noise_hold": family.default_noise_hold,
                    "noise_hold_max": family.default_noise_hold_max,
                    "action_repeat": self.repeat}
        return dataclasses.replace(self, **{k: v for k, v in defaults.items()
                                            if getattr(self, k) is None})

    def agent_config(self, spec) -> SACConfig:
        """The agent's SACConfig for an environment's spaces (an ``EnvSpec``)."""
        return self.sac_config(spec.obs_dim, spec.act_dim, spec.policy, spec.image_shape,
                               spec.state_dim)

    @property
    def pixel_settings(self):
        """The frames a ``pixels`` run observes (``envs.make.Pixels``), else ``None``."""
        return (Pixels(self.image_size, self.frame_stack, self.pixels_with_state)
                if self.pixels else None)

    @property
    def repeat(self) -> int:
        """Env steps per agent step: ``action_repeat``, or where it is None the references'
        for the task (``envs.dmc.reference_action_repeat``)."""
        return (self.action_repeat if self.action_repeat is not None
                else reference_action_repeat(self.env_id, self.pixels)[0])

    @property
    def offline_rows(self) -> int:
        """The rows of each batch drawn from the offline data: ``round(batch_size *
        offline_ratio)``."""
        return round(self.batch_size * self.offline_ratio)

    def to_dict(self) -> dict:
        """Plain values (JSON-serialisable) by flat name: the fields, then the options."""
        values = dataclasses.asdict(self)
        options = values.pop("options")
        return {**values, **options}

    @classmethod
    def field_defaults(cls) -> dict:
        """Every field's default value, by name (the options given: none)."""
        return {f.name: f.default for f in dataclasses.fields(cls) if f.name != "options"}

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        """A config from plain values by flat name (``to_dict``'s); unknown keys are an
        error."""
        return cls(**values)


TrainConfig = dataclasses.make_dataclass(
    "TrainConfig", _fields_of(RunSettings) + _fields_of(SACConfig, {f.name for f in AGENT_FIELDS})
    + [("options", Dict[str, Any], dataclasses.field(
        default_factory=dict, hash=False,
        metadata={"help": "the chosen variants' options given, by name"}))],
    bases=(_TrainConfigMethods,), frozen=True, init=False)
TrainConfig.__module__ = __name__  # for pickling and the docs
registry.RESERVED_NAMES.update(f.name for f in dataclasses.fields(RunSettings))
TrainConfig.__doc__ = """Everything a training run needs: the run's settings (``RunSettings``),
    the agent's shared settings (``SACConfig``'s, with its defaults) and ``options``, the options
    of the chosen algorithm, network and encoder by flat name (``{"num_quantiles": 10, ...}``,
    the defaults filled in; ``from_dict`` and ``to_dict`` take and give them beside the fields).
    One env step means one step of each of the ``num_envs``. Invalid values raise ``ValueError``
    naming the field."""


def settings() -> Dict[str, tuple]:
    """Every setting by flat name: ``(type, default, help)``, the ``TrainConfig`` fields then
    the registered variants' options (the command line's flags)."""
    hints = typing.get_type_hints(TrainConfig)
    found = {f.name: (hints[f.name], f.default, _field_help(f))
             for f in dataclasses.fields(TrainConfig) if f.name != "options"}
    for name, (field, hint, owners) in registry.option_fields().items():
        if name in found:  # registered before the driver reserved its names
            raise ValueError(f"the option {name!r} of {next(iter(owners))} takes the name of "
                             "a run setting; rename it")
        defaults = set(map(repr, owners.values()))  # shared by owners with other defaults: none
        found[name] = (hint, field.default if len(defaults) == 1 else None,
                       _option_help(field, owners))
    return found


def help_text(name: str) -> str:
    """The command-line help of a setting; a room's lists what is registered now, an option
    says whose it is."""
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    if name in fields:
        return _field_help(fields[name])
    field, _, owners = registry.option_fields()[name]
    return _option_help(field, owners)


def _field_help(field: dataclasses.Field) -> str:
    text = field.metadata["help"]
    return f"{text}, one of: {room_help(field.name)}" if field.name in ROOMS else text


def _option_help(field: dataclasses.Field, owners: dict) -> str:
    """The option's help and whose it is; each owner's default where they differ."""
    if len(set(map(repr, owners.values()))) == 1:
        return f"{field.metadata['help']} ({', '.join(owners)})"
    return (f"{field.metadata['help']} ("
            + ", ".join(f"{o}: default {d}" for o, d in owners.items()) + ")")


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
