"""The run configuration, ``TrainConfig``: the run's and the agent's settings by group
(``funcsac.driver.settings``, ``funcsac.settings``) and the chosen variants' options, each with its
default and its help, from which the command line's flags are made (``funcsac.driver.flags``)."""
from __future__ import annotations

import dataclasses
import difflib
import json
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Dict, Optional

import torch

from .. import registry
from ..config import SACConfig, option_settings
from ..registry import POLICIES, COMPONENTS, component_help
from ..settings import LearningSettings, NetworkSettings, NormalizationSettings
from ..state import HParams
from .envs.dmc import reference_action_repeat
from .envs.make import Pixels
from .factories import FACTORY_FIELDS, import_factory
from .settings import (EnvSettings, ExplorationSettings, FactorySettings, RecordSettings,
                       ReplaySettings, RunSettings)
from .validate import check_train_config

# the agent's settings: SACConfig's fields with help, its groups (the rest come from the
# environment, are code, or are the run's: device and dtype, as strings)
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


def nearest_keys(unknown, known) -> str:
    """``"; did you mean ..."`` naming the known key nearest each unknown one that has a near one
    (``difflib``'s ratio at least 0.6), else ``""``."""
    near = {k: difflib.get_close_matches(k, known, n=1) for k in unknown}
    said = [f"{m[0]!r} for {k!r}" for k, m in near.items() if m]
    return f"; did you mean {', '.join(said)}?" if said else ""


@dataclasses.dataclass(frozen=True, kw_only=True, init=False)
class TrainConfig(RecordSettings, NormalizationSettings, FactorySettings, NetworkSettings,
                  LearningSettings, ReplaySettings, ExplorationSettings, EnvSettings, RunSettings):
    """Everything a training run needs, by concern: the run (``RunSettings``), its environments,
    exploration and replay (``funcsac.driver.settings``), the agent's learning, networks and
    normalisation (``funcsac.settings``, ``SACConfig``'s own groups), the run's recording, and
    ``options``, the options of the chosen algorithm, network and encoder by flat name
    (``{"num_quantiles": 10, ...}``, the defaults filled in; ``from_dict`` and ``to_dict`` take and
    give them beside the fields). One env step means one step of each of the ``num_envs``.
    Invalid values raise ``ValueError`` naming the field."""

    options: Dict[str, Any] = dataclasses.field(
        default_factory=dict, hash=False,
        metadata={"help": "the chosen variants' options given, by name"})

    def __init__(self, *, options: Optional[dict] = None, **settings):
        """A config from settings by flat name: the fields, and the registered variants'
        options, given in ``options`` or beside the fields (``TrainConfig(num_quantiles=10)``);
        ``ValueError`` naming an unknown one. ``options`` then holds every option of the chosen
        variants, the defaults filled in."""
        fields = self.field_defaults()
        known = option_fields()
        unknown = sorted(set(settings) - set(fields) - set(known))
        if unknown:
            raise ValueError(f"unknown config keys {unknown}"
                             f"{nearest_keys(unknown, [*fields, *known])}; `funcsac train "
                             "--help-all` lists every setting")
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
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(self.options).items()}
        object.__setattr__(self, "options", given)
        check_train_config(self)
        # the variants chosen for the policy family of Box actions, whose options the flags name
        chosen = types.SimpleNamespace(policy="tanh_gaussian", algorithm=self.algorithm,
                                       network=self.network, encoder=self.encoder)
        object.__setattr__(self, "options", option_settings(chosen, given))

    def sac_config(self, obs_dim: int, act_dim: int, policy: str = "tanh_gaussian",
                   image_shape: tuple = (), state_dim: int = 0,
                   privileged_dim: int = 0) -> SACConfig:
        """The agent's SACConfig for an environment's observation and action sizes and the
        policy family its action space needs (``EnvSpec.policy``); with an ``image_shape``, the
        encoder's ``image_features`` take the place of ``obs_dim`` (and a ``state_dim`` vector
        goes beside them); ``privileged_dim`` numbers end the observations, for the critics."""
        fields = {f.name: getattr(self, f.name) for f in AGENT_FIELDS}
        fields.update({name: import_factory(getattr(self, name), name)
                       for name in FACTORY_FIELDS if getattr(self, name)})
        return SACConfig.of(obs_dim=self.image_features if image_shape else obs_dim,
                            act_dim=act_dim, policy=policy, device=self.device,
                            dtype=getattr(torch, self.dtype), image_shape=image_shape,
                            state_dim=state_dim, privileged_dim=privileged_dim, **fields,
                            **self.options)

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
                               spec.state_dim, spec.privileged_dim)

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
    def vector_gradient_steps(self) -> int:
        """Each agent's gradient steps per vector step: ``gradient_steps``, or ``utd *
        num_envs``."""
        return self.gradient_steps or self.utd * self.num_envs

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


def option_fields() -> Dict[str, tuple]:
    """``registry.option_fields()``; ``ValueError`` if an option takes the name of a setting of
    ``TrainConfig`` (the flags and the configs are made of both)."""
    found = registry.option_fields()
    for name, (_, _, owners) in found.items():
        if name in TrainConfig.__dataclass_fields__:
            raise ValueError(f"{next(iter(owners))} has an option {name!r}, a name taken by a "
                             "setting of TrainConfig; rename it")
    return found


def settings() -> Dict[str, tuple]:
    """Every setting by flat name: ``(type, default, help)``, the ``TrainConfig`` fields then
    the registered variants' options (the command line's flags)."""
    hints = typing.get_type_hints(TrainConfig)
    found = {f.name: (hints[f.name], f.default, _field_help(f))
             for f in dataclasses.fields(TrainConfig) if f.name != "options"}
    for name, (field, hint, owners) in option_fields().items():
        defaults = set(map(repr, owners.values()))  # shared by owners with other defaults: none
        found[name] = (hint, field.default if len(defaults) == 1 else None,
                       _option_help(field, owners))
    return found


def help_text(name: str) -> str:
    """The command-line help of a setting; a component's lists what is registered now, an option
    says whose it is."""
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    if name in fields:
        return _field_help(fields[name])
    field, _, owners = option_fields()[name]
    return _option_help(field, owners)


def _field_help(field: dataclasses.Field) -> str:
    text = field.metadata["help"]
    return f"{text}, one of: {component_help(field.name)}" if field.name in COMPONENTS else text


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
