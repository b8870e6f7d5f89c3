"""The registry: each algorithm (the losses ``update`` trains with) and each policy family, by
name. It imports nothing from funcsac, so every module may read it; a variant's module registers
itself on import (``funcsac/algorithms/``), and a variant defined outside funcsac does the same.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict


def _one_output(config) -> int:
    return 1


def _no_check(config) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """What ``SACConfig.algorithm`` names, for one policy family.

    ``losses`` is a ``funcsac.Losses``; ``critic_outputs(config)`` the width of each default
    critic's output (1: one value; TQC: its quantiles); ``check(config)`` raises ``ValueError``
    naming a setting the algorithm cannot take; ``target_networks`` says whether the state keeps
    polyak-averaged target critics (without them ``SACState.target_critic`` is empty and ``tau``
    unused); ``help`` is one line for the command line's help.
    """

    name: str
    losses: Any
    policy: str = "tanh_gaussian"
    help: str = ""
    target_networks: bool = True
    critic_outputs: Callable[[Any], int] = _one_output
    check: Callable[[Any], None] = _no_check


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


# policy family name -> its algorithms by name
ALGORITHMS_BY_POLICY: Dict[str, AlgorithmTable] = {}
# policy family name -> the family (a funcsac.policy.PolicyFamily)
POLICIES: Dict[str, Any] = {}


def register_policy(name: str, family) -> None:
    """Make ``family`` available as ``SACConfig.policy=name``, with no algorithms yet."""
    POLICIES[name] = family
    ALGORITHMS_BY_POLICY.setdefault(name, AlgorithmTable(name))


def register(algorithm: Algorithm) -> Algorithm:
    """Make ``algorithm`` available as ``SACConfig.algorithm`` for its policy family (which must
    be registered); returns it."""
    if algorithm.policy not in ALGORITHMS_BY_POLICY:
        raise ValueError(f"algorithm {algorithm.name!r} names the policy {algorithm.policy!r}, "
                         f"which is not registered; registered: {sorted(POLICIES)}")
    ALGORITHMS_BY_POLICY[algorithm.policy][algorithm.name] = algorithm
    return algorithm


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


def algorithm_help() -> str:
    """One line per registered algorithm: its name, policy family and help."""
    return "; ".join(f"{name} ({policy}): {a.help}" if a.help else f"{name} ({policy})"
                     for policy, table in ALGORITHMS_BY_POLICY.items()
                     for name, a in table.items())
