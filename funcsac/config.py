"""Static SAC configuration: sizes, structure and the initial values of the hyperparameters."""
from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable, Optional, Tuple

import torch
from torch import nn

from . import registry
from .platform.devices import check_device
from .config_checks import require, validate_config
from .registry import POLICIES, COMPONENTS, algorithm_of, is_int, is_real, option_names, variant_of
from .settings import LearningSettings, NetworkSettings, NormalizationSettings

ModuleFactory = Callable[[int, int, tuple], nn.Module]
# fields that only set the initial value of a dynamic hyperparameter (a leaf of the state)
INITIAL_VALUE_FIELDS = ("gamma", "tau", "actor_lr", "critic_lr", "alpha_lr", "init_alpha",
                        "target_entropy", "target_entropy_scale")


@dataclasses.dataclass(frozen=True)
class SACConfig(LearningSettings, NetworkSettings, NormalizationSettings):
    """Everything about an agent that does not change while it trains.

    Learning rates, ``tau``, ``gamma`` and ``target_entropy`` given here are only the initial values
    of the state's dynamic hyperparameters (0-d tensors in ``SACState.hparams``), which may be
    changed or vmapped at run time without recompiling.

    Variants: ``algorithm``, ``network`` and ``encoder`` name registered variants
    (``funcsac.registry``), each of which owns its options, held in ``algorithm_options``,
    ``network_options`` and ``encoder_options`` (``None``: the variant's defaults), such as
    ``SACConfig(..., algorithm="tqc", algorithm_options=TQCOptions(num_quantiles=10))``;
    ``SACConfig.of`` takes every setting by its flat name instead
    (``SACConfig.of(..., algorithm="tqc", num_quantiles=10)``). Another variant takes its own
    options: ``dataclasses.replace(cfg, algorithm="sac")`` on a TQC config is refused (its
    options are TQC's), ``SACConfig.of(**{**cfg.settings(), "algorithm": "sac"}, ...)`` is not
    (TQC's options at their defaults are dropped).

    ``network`` chooses the default networks: ``"mlp"``, ReLU MLPs with one hidden layer per entry
    of ``hidden_sizes`` (options ``funcsac.architectures.MLPOptions``: the critic's dropout,
    LayerNorm and batch renormalisation, the actor's batch renormalisation), or the residual
    networks ``"simba"`` (SimBa, Lee et al. 2024) and ``"bronet"`` (BRO, Nauman et al. 2024), with
    one residual block per entry of ``hidden_sizes``, whose entries are then all equal (the width of
    the residual stream): ``(512, 512)`` is 2 blocks of width 512 (``funcsac.architectures.simba``,
    ``bronet``).
    ``actor_hidden_sizes`` gives the actor other sizes than the critics (empty: ``hidden_sizes``).

    ``actor_factory(input_dim, act_dim, actor_hidden_sizes)`` must build a module mapping
    ``obs [B, input_dim]`` (``input_dim`` is ``obs_dim`` unless a state vector goes beside
    images) to the policy family's head (the tanh-Gaussian's ``[B, 2 * act_dim]``, mean and raw
    log-std); ``critic_factory(input_dim, act_dim, hidden_sizes)`` one mapping the
    concatenation ``[B, input_dim + act_dim]`` to ``[B, critic_outputs]`` (1, or what the algorithm
    says: ``funcsac.registry.Algorithm.critic_outputs``); a policy family may define its
    networks otherwise (``funcsac.variants.discrete``). ``None`` means the default networks; a
    custom critic may use ``funcsac.networks.KeyedDropout``, whose masks ``update`` draws from
    the state's key.

    ``image_shape`` ``(C, H, W)`` makes the observations ``uint8`` images (frames stacked
    along the channels): an encoder, ``encoder_factory(image_shape, obs_dim)`` (default: the one
    ``encoder`` names, ``"drq"``), maps them to ``obs_dim`` features, which the actor and the
    critics take. As in DrQ, the encoder is shared by the critics and trained by their loss
    only (the actor sees its features detached), the targets keep a polyak-averaged copy (at the
    rate the encoder says), and each gradient step augments the images as the encoder says
    (``funcsac.encoders.DrQOptions``: a random shift). With ``state_dim``, each
    observation is a dict of ``"pixels"`` (the images) and ``"state"`` (a ``[state_dim]`` vector
    in ``dtype``, such as proprioception), and the actor and the critics take the encoder's
    features followed by the state, ``input_dim = obs_dim + state_dim`` numbers.

    ``normalize_obs`` and ``scale_rewards`` keep running statistics in ``SACState.norm``
    (``funcsac.normalize``): ``act`` and ``update`` see ``(obs - mean) / std`` (clipped to 10) and
    rewards divided by the std of the discounted return (with ``return_bound``, by at least
    ``max |return| / return_bound``); whoever collects the data updates them with
    ``funcsac.normalize.observe``.

    With ``lr_decay_to < 1`` the actor's, the critics' and the temperature's learning rates at
    their optimiser's step ``t`` (its steps before, ``AdamState.count``) are ``lr * (1 - (1 -
    lr_decay_to) * min(t / lr_decay_steps, 1))`` (optax's ``linear_schedule``), or with
    ``lr_decay_shape="cosine"`` ``lr * (lr_decay_to + (1 - lr_decay_to) * (1 + cos(pi *
    min(t / lr_decay_steps, 1))) / 2)`` (optax's ``cosine_decay_schedule``): one compiled graph
    serves every step, and a learning rate changed in ``SACState.hparams`` decays alike.

    Weight decay applies to the parameters ``weight_decay_on`` names: ``"weights"``, those of >= 2
    dimensions (not biases nor normalisation scales), or ``"all"`` trainable parameters. Module
    buffers (a BatchNorm's running statistics) and parameters with ``requires_grad=False`` travel
    in the state but are never trained, decayed nor averaged into the targets.
    """

    obs_dim: int
    act_dim: int
    # the settings (funcsac.settings' groups, keyword-only), then what the environment and the
    # code give
    image_shape: Tuple[int, ...] = ()  # (C, H, W) of uint8 images; empty: vectors of obs_dim
    state_dim: int = 0  # images: a state vector of this size beside them (dict observations)
    # vectors: the last privileged_dim numbers of each observation only the critics see
    # (asymmetric actor-critic); the actor takes the first obs_dim
    privileged_dim: int = 0
    encoder_factory: Optional[Callable[[tuple, int], nn.Module]] = None  # None: the encoder's
    actor_factory: Optional[ModuleFactory] = None
    critic_factory: Optional[ModuleFactory] = None
    device: str = "cpu"
    dtype: torch.dtype = torch.float32
    policy: str = "tanh_gaussian"  # the policy family (funcsac.registry.POLICIES)
    # the chosen variants' options (funcsac.registry); None: the variant's defaults
    algorithm_options: Any = None
    network_options: Any = None
    encoder_options: Any = None

    def __post_init__(self):
        for name in ("hidden_sizes", "actor_hidden_sizes", "adam_betas", "alpha_adam_betas",
                     "image_shape"):
            value = getattr(self, name)
            require(isinstance(value, (list, tuple)), name, "must be a sequence of numbers", value)
            object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "device", check_device(self.device, "SACConfig.device"))
        if self.num_target_critics is None and is_int(self.num_critics):
            object.__setattr__(self, "num_target_critics", min(2, self.num_critics))
        if (self.target_entropy is None and is_int(self.act_dim) and self.policy in POLICIES
                and is_real(self.target_entropy_scale)):
            object.__setattr__(self, "target_entropy",
                               self.target_entropy_scale
                               * POLICIES[self.policy].default_target_entropy(self.act_dim))
        for component in COMPONENTS:  # None: the chosen variant's default options
            kind = _options_kind(self, component)
            if getattr(self, f"{component}_options") is None and kind is not None:
                object.__setattr__(self, f"{component}_options", kind())
        validate_config(self)

    @classmethod
    def of(cls, **settings) -> "SACConfig":
        """A config from flat settings: its own fields, and the options of the chosen
        algorithm, network and encoder by their field names (``num_quantiles=10``). An option
        of a variant the config does not choose is an error, unless it has that variant's
        default value (so a file of every variant's defaults loads)."""
        own = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in settings.items() if k in own}
        rest = {k: v for k, v in settings.items() if k not in own}
        # the chosen variants' names, before the options are built
        probe = types.SimpleNamespace(**{f.name: fields.get(f.name, f.default)
                                         for f in dataclasses.fields(cls)})
        for component, (kind, given) in given_options(probe, rest).items():
            base = fields.get(f"{component}_options")
            if given:
                fields[f"{component}_options"] = (kind(**given) if base is None
                                             else dataclasses.replace(base, **given))
        return cls(**fields)

    def settings(self) -> dict:
        """The config's settings by flat name: the fields with help (``registry.setting``), then
        the chosen variants' options (``option_settings``); ``SACConfig.of`` with them and the
        other fields (sizes, policy, images, factories, device, dtype) gives the config back."""
        flat = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if "help" in f.metadata}
        return {**flat, **self.option_settings()}

    def option_settings(self) -> dict:
        """The chosen algorithm's, network's and encoder's options by flat name."""
        return flat_options({c: getattr(self, f"{c}_options") for c in COMPONENTS})

    @property
    def critic_outputs(self) -> int:
        """Outputs of each default critic, as the algorithm says (1: one value)."""
        return algorithm_of(self).critic_outputs(self)

    @property
    def obs_dtype(self) -> torch.dtype:
        """The dtype of observations: ``uint8`` for images, else ``dtype``."""
        return torch.uint8 if self.image_shape else self.dtype

    @property
    def obs_shape(self) -> tuple:
        """The shape of one observation as a batch holds it (of a dict observation's
        ``"pixels"``): ``image_shape``, or ``(obs_dim + privileged_dim,)``."""
        return self.image_shape or (self.obs_dim + self.privileged_dim,)

    @property
    def actor_obs_shape(self) -> tuple:
        """The shape of one observation as the actor takes it: ``obs_shape`` without the
        privileged numbers."""
        return self.image_shape or (self.obs_dim,)

    @property
    def obs_parts(self) -> dict:
        """The entries of a dict observation as ``key -> (shape, dtype)`` (images with a state
        vector: ``"pixels"`` and ``"state"``); empty when observations are tensors."""
        if not self.state_dim:
            return {}
        return {"pixels": (self.image_shape, torch.uint8), "state": ((self.state_dim,), self.dtype)}

    @property
    def input_dim(self) -> int:
        """What the actor takes of an observation: ``obs_dim`` numbers (an encoder's features
        for images), followed by the ``state_dim`` of a dict observation."""
        return self.obs_dim + self.state_dim

    @property
    def critic_input_dim(self) -> int:
        """What the critics take of an observation: ``input_dim`` numbers, then the
        ``privileged_dim`` only they see."""
        return self.input_dim + self.privileged_dim

    @property
    def temperature_betas(self) -> tuple:
        """The temperature's Adam betas: ``alpha_adam_betas``, or ``adam_betas`` if empty."""
        return self.alpha_adam_betas or self.adam_betas


def given_options(config, given: dict) -> dict:
    """``{component: (options class, its settings in given)}`` for the variants ``config`` chooses
    (anything with ``policy``, ``algorithm``, ``network`` and ``encoder``; the class ``None`` for
    a variant without options). A flat setting of ``given`` that is none of theirs is an error
    (``_check_unchosen``)."""
    rest, found = dict(given), {}
    for component in COMPONENTS:
        variant = variant_of(config, component)
        taken = set(option_names(variant.options)) & set(SACConfig.__dataclass_fields__)
        if taken:
            raise ValueError(f"{component} {variant.name!r} has an option {sorted(taken)[0]!r}, "
                             "a name taken by a field of SACConfig; rename it")
        found[component] = variant.options, {k: rest.pop(k) for k in option_names(variant.options)
                                        if k in rest}
    _check_unchosen(rest, config)
    return found


def option_settings(config, given: dict) -> dict:
    """Every option of the variants ``config`` chooses by flat name: those in ``given``, the
    rest at the variant's defaults (``given_options``)."""
    return flat_options({component: kind and kind(**mine)
                         for component, (kind, mine) in given_options(config, given).items()})


def flat_options(options: dict) -> dict:
    """The fields of ``{component: options dataclass or None}`` by flat name."""
    return {k: v for o in options.values() if o is not None
            for k, v in dataclasses.asdict(o).items()}


def _check_unchosen(rest: dict, config) -> None:
    """``ValueError`` for a flat setting that is no one's option, or an option of a variant the
    config does not choose given a value other than that variant's default."""
    owners = registry.option_fields()
    for name, value in rest.items():
        if name not in owners:
            raise ValueError(f"SACConfig has no setting {name!r}: not a field, nor an option of "
                             f"the registered variants ({', '.join(sorted(owners))})")
        _, _, by = owners[name]
        if value not in by.values():
            chosen = ", ".join(f"{r} {getattr(config, r)!r}" for r in COMPONENTS)
            raise ValueError(f"{name} is an option of {' and '.join(by)}, which this config "
                             f"does not choose ({chosen}); got {name}={value!r}")


def _options_kind(cfg: SACConfig, component: str) -> Optional[type]:
    """The options dataclass of the variant ``cfg`` chooses in ``component`` (``None``: it has none,
    or ``cfg`` names no registered variant, which ``validate_config`` reports)."""
    try:
        return variant_of(cfg, component).options
    except (ValueError, TypeError):
        return None
