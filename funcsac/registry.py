"""The registry: each algorithm (the losses and the order of the steps ``update`` trains with),
network, image encoder, policy family and preset, by name, with the options each owns. It
imports nothing from funcsac, so every module may read it; a variant registers itself on import
(its folder in ``funcsac/variants/``; the default network and encoder in ``architectures`` and
``encoders``), and a variant defined outside funcsac does the same.

Options: a variant's settings are a frozen dataclass of its own (``Algorithm.options``,
``Network.options``, ``Encoder.options``), whose fields are made with ``setting`` (a default and
a help line) and which may define ``check(self, config)`` raising ``ValueError``. A config holds
the chosen variants' options (``SACConfig.algorithm_options``, ...); flat settings (the command
line, config files, presets) name an option by its field name, which is unique across components.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, Callable, Dict, Optional


def setting(default, help: str, **field):
    """A dataclass field that is a setting: its default and its one-line help (the command
    line's flags are made from these)."""
    return dataclasses.field(default=default, metadata={"help": help}, **field)


def is_int(x) -> bool:
    """Whether ``x`` is an integer (not a bool): for the checks of settings."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_real(x) -> bool:
    """Whether ``x`` is a finite number (not a bool): for the checks of settings."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _one_output(config) -> int:
    return 1


def _no_check(config) -> None:
    return None


def _no_modules(config) -> dict:
    return {}


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """What ``SACConfig.algorithm`` names, for one policy family.

    ``losses`` is a ``funcsac.Losses``; ``update(state, batch, losses) -> (state, metrics)`` the
    algorithm's own composition of the steps on a prepared batch (``None``: SAC's,
    ``funcsac.updates.sac_update``; SimBa's takes the actor's step first, BRO's adds its
    optimistic actor's); ``critic_outputs(config)`` the width of each default critic's output
    (1: one value; TQC: its quantiles); ``check(config)`` raises ``ValueError`` naming a setting
    the algorithm cannot take; ``target_networks`` says whether the state keeps polyak-averaged
    target critics (without them ``SACState.target_critic`` is empty and ``tau`` unused);
    ``help`` is one line for the command line's help.

    An algorithm with state of its own (BRO's optimistic actor and its adjustments) says how it
    is made and used: ``extra_modules(config)`` the modules it keeps beside SAC's (by name; built
    after SAC's networks from the same seed, weightless templates in ``Static.extra``);
    ``init_extra(config, modules)`` the pytree of tensors ``SACState.extra`` starts from, made from
    freshly initialised ``modules``; its ``update`` steps it; ``explore(state, obs, noise)``
    the actions it collects experience with (``act`` with ``deterministic=False``; default: the
    policy family's sample); ``metrics`` the names of the metrics its step adds.
    """

    name: str
    losses: Any
    policy: str = "tanh_gaussian"
    help: str = ""
    target_networks: bool = True
    update: Optional[Callable] = None
    critic_outputs: Callable[[Any], int] = _one_output
    check: Callable[[Any], None] = _no_check
    options: Optional[type] = None
    extra_modules: Callable[[Any], Dict[str, Any]] = _no_modules
    init_extra: Optional[Callable[[Any, Dict[str, Any]], Any]] = None
    explore: Optional[Callable] = None
    metrics: tuple = ()


@dataclasses.dataclass(frozen=True)
class Network:
    """What ``SACConfig.network`` names: ``build(in_dim, out_dim, hidden_sizes, options, part)``
    makes the module mapping ``[B, in_dim]`` to ``[B, out_dim]`` for ``part`` ``"actor"`` or
    ``"critic"`` (``options``: an instance of ``options``, or ``None``); ``check(config)`` raises
    ``ValueError`` naming a setting the network cannot take; ``post_step(params, options)``, if
    given, maps the parameters after each of their optimiser steps to those kept (SimbaV2
    projects its weights back onto the unit sphere): one network's tensors by name, the
    actor's or the critics' stacked ``[N, ...]`` (so it acts on the last axes), buffers
    included; a factory's network (``actor_factory``, ``critic_factory``) is left as stepped."""

    name: str
    build: Callable
    options: Optional[type] = None
    help: str = ""
    check: Callable[[Any], None] = _no_check
    post_step: Optional[Callable] = None


@dataclasses.dataclass(frozen=True)
class Encoder:
    """What ``SACConfig.encoder`` names for image observations: ``build(image_shape, features,
    options)`` makes the module mapping images ``[B, C, H, W]`` (floats ``prepare`` made) to
    ``[B, features]``; ``prepare(images, dtype, key, options)`` turns the ``uint8`` images of a
    gradient step into what it takes (``key`` ``None``: acting, no augmentation);
    ``target_rate(tau, options)`` is the target encoder's polyak rate; ``view_count(options)`` the
    augmented views of each transition a critic step takes (DrQ's K = M: the target averaged
    over K, the loss over M); ``check(config)`` raises ``ValueError`` naming a setting the
    encoder cannot take."""

    name: str
    build: Callable
    prepare: Callable
    target_rate: Callable
    options: Optional[type] = None
    help: str = ""
    check: Callable[[Any], None] = _no_check
    view_count: Callable[[Any], int] = _one_output


class AlgorithmTable(dict):
    """The algorithms of one policy family by name; storing a bare ``Losses`` stores it as an
    ``Algorithm`` of that name with the defaults."""

    def __init__(self, policy: str):
        super().__init__()
        self.policy = policy

    def __setitem__(self, name: str, value) -> None:
        if not isinstance(value, Algorithm):
            value = Algorithm(name, value, policy=self.policy)
        if value.name != name or value.policy != self.policy:
            raise ValueError(f"algorithm {value.name!r} of the {value.policy} policy stored as "
                             f"{name!r} of the {self.policy} policy")
        super().__setitem__(name, value)


# the optree namespace of funcsac's pytree types (``SACState``): ``optree.tree_map(f, state,
# namespace=NAMESPACE)``
NAMESPACE = "funcsac"
# policy family name -> its algorithms by name
ALGORITHMS_BY_POLICY: Dict[str, AlgorithmTable] = {}
# policy family name -> the family (a funcsac.policy.PolicyFamily)
POLICIES: Dict[str, Any] = {}
# network name -> Network; encoder name -> Encoder
NETWORKS: Dict[str, Network] = {}
ENCODERS: Dict[str, Encoder] = {}


# preset name -> its settings by flat name (SACConfig's fields, the variants' options and the
# driver's run settings); preset name -> setting -> (value by task, the value on any other task,
# its source); the presets that need offline data, which a preset cannot carry
PRESETS: Dict[str, dict] = {}
PER_TASK: Dict[str, Dict[str, tuple]] = {}
NEEDS_OFFLINE_DATA: set = set()


def register_preset(name: str, settings: dict, per_task: Optional[Dict[str, tuple]] = None,
                    needs_offline_data: bool = False) -> None:
    """Make ``settings`` available as the preset ``name`` (``funcsac train --preset NAME``);
    ``per_task`` maps a setting to ``(value by task, value on any other task, source)``, the
    values a reference sets per task; ``needs_offline_data``: the preset is refused without
    ``--offline-data``."""
    PRESETS[name] = dict(settings)
    if per_task:
        PER_TASK[name] = dict(per_task)
    if needs_offline_data:
        NEEDS_OFFLINE_DATA.add(name)


def register_policy(name: str, family) -> None:
    """Make ``family`` available as ``SACConfig.policy=name``, with no algorithms yet."""
    POLICIES[name] = family
    ALGORITHMS_BY_POLICY.setdefault(name, AlgorithmTable(name))


def register(variant):
    """Make an ``Algorithm`` available as ``SACConfig.algorithm`` for its policy family (which
    must be registered), a ``Network`` as ``SACConfig.network``, an ``Encoder`` as
    ``SACConfig.encoder``; returns it. ``ValueError`` if its options' names are taken by another
    component's options or by the shared settings."""
    component = _component_of(variant)
    if component == "algorithm" and variant.policy not in ALGORITHMS_BY_POLICY:
        raise ValueError(f"algorithm {variant.name!r} names the policy {variant.policy!r}, "
                         f"which is not registered; registered: {sorted(POLICIES)}")
    _check_option_names(component, variant)
    if component == "algorithm":
        ALGORITHMS_BY_POLICY[variant.policy][variant.name] = variant
    else:
        {"network": NETWORKS, "encoder": ENCODERS}[component][variant.name] = variant
    return variant


COMPONENTS = ("algorithm", "network", "encoder")  # the components whose variants own options


def _component_of(variant) -> str:
    for component, kind in zip(COMPONENTS, (Algorithm, Network, Encoder)):
        if isinstance(variant, kind):
            return component
    raise TypeError(f"register takes an Algorithm, a Network or an Encoder, got {variant!r}")


def option_names(options: Optional[type]) -> tuple:
    """The field names of an options dataclass (none for ``None``)."""
    return () if options is None else tuple(f.name for f in dataclasses.fields(options))


def _check_option_names(component: str, variant) -> None:
    """An option's name is not another component's option's (a config that chooses the variant
    checks it is none of its own fields: ``SACConfig.of``, the driver's ``TrainConfig``)."""
    for name in option_names(variant.options):
        owners = [f"{r} {v.name!r}" for r, v in variants() if r != component
                  and name in option_names(v.options)]
        if owners:
            taken = owners[0]
            raise ValueError(f"{component} {variant.name!r} has an option {name!r}, a name taken "
                             f"by {taken}; rename it")


def variants():
    """Every registered ``(component, variant)`` that may own options."""
    for table in ALGORITHMS_BY_POLICY.values():
        yield from (("algorithm", a) for a in table.values())
    yield from (("network", n) for n in NETWORKS.values())
    yield from (("encoder", e) for e in ENCODERS.values())


def option_fields() -> Dict[str, tuple]:
    """Every registered variant's option by its flat name: ``(dataclasses.Field, type hint,
    owners)``, ``owners`` mapping the ``"component 'name'"`` of each variant that has it to its
    default there (two algorithms may share an option, each with a default of its own)."""
    found: Dict[str, tuple] = {}
    for component, v in variants():
        if v.options is None:
            continue
        hints = typing.get_type_hints(v.options)
        for f in dataclasses.fields(v.options):
            field, hint, owners = found.get(f.name, (f, hints[f.name], {}))
            found[f.name] = (field, hint, {**owners, f"{component} {v.name!r}": f.default})
    return found


def variant_of(config, component: str):
    """The variant ``config`` chooses in ``component`` (``"algorithm"``, ``"network"`` or
    ``"encoder"``); ``ValueError`` listing the registered ones otherwise."""
    if component == "algorithm":
        return algorithm_of(config)
    table, name = {"network": NETWORKS, "encoder": ENCODERS}[component], getattr(config, component)
    if name not in table:
        raise ValueError(f"SACConfig.{component} must be one of {sorted(table)}, got {name!r}")
    return table[name]


def algorithm_of(config) -> Algorithm:
    """The ``Algorithm`` that ``config.algorithm`` names for ``config.policy``; ``ValueError``
    listing the registered names otherwise."""
    table = ALGORITHMS_BY_POLICY.get(config.policy)
    if table is None:
        raise ValueError(f"SACConfig.policy must be one of {sorted(POLICIES)}, got "
                         f"{config.policy!r}")
    if config.algorithm not in table:
        raise ValueError(f"SACConfig.algorithm must be one of {sorted(table)} for the "
                         f"{config.policy} policy, got {config.algorithm!r}")
    return table[config.algorithm]


def losses_for(config):
    """The losses of ``config.algorithm`` for ``config.policy`` (a ``funcsac.Losses``)."""
    return algorithm_of(config).losses


def component_help(component: str) -> str:
    """The registered variants of ``component`` with their help, for the command line."""
    if component == "algorithm":
        return algorithm_help()
    table = {"network": NETWORKS, "encoder": ENCODERS}[component]
    return "; ".join(f"{n}: {v.help}" if v.help else n for n, v in table.items())


def algorithm_help() -> str:
    """One line per registered algorithm: its name, policy family and help."""
    return "; ".join(f"{name} ({policy}): {a.help}" if a.help else f"{name} ({policy})"
                     for policy, table in ALGORITHMS_BY_POLICY.items()
                     for name, a in table.items())
