"""Several independent agents in one run: seeds and hyperparameter sweeps, trained with one
vmapped update. Agent ``a`` behaves as a single run with its own seed and hyperparameters."""
from __future__ import annotations

import dataclasses
from typing import List

import torch
import torch.utils._pytree as pytree

from ... import keys
from ...state import HParams, SACState

SWEEPABLE = HParams._fields


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """One agent: its seed and the dynamic hyperparameters it overrides."""

    seed: int
    overrides: dict

    def label(self) -> dict:
        """Columns that identify the agent in logs."""
        return {"seed": self.seed, **self.overrides}


def parse_sweep(text: str) -> tuple:
    """``"critic_lr=1e-4,3e-4"`` -> ``("critic_lr", [1e-4, 3e-4])``; ``""`` ->
    ``(None, [None])``."""
    if not text:
        return None, [None]
    name, sep, values = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or name not in SWEEPABLE:
        raise ValueError("--sweep must look like NAME=V1,V2,... with NAME one of "
                         f"{list(SWEEPABLE)}, "
                         f"got {text!r}")
    try:
        parsed = [float(v) for v in values.split(",")]
    except ValueError as e:
        raise ValueError(f"--sweep values must be numbers, got {values!r}") from e
    return name, parsed


def agent_specs(seed: int, num_seeds: int, sweep: str) -> List[AgentSpec]:
    """Every sweep value crossed with seeds ``seed, seed + 1, ..., seed + num_seeds - 1``."""
    name, values = parse_sweep(sweep)
    return [AgentSpec(seed + s, {} if name is None else {name: v})
            for v in values for s in range(num_seeds)]


def seeds_label(agents: List[AgentSpec]) -> str:
    """``"seed 1"``, or ``"seeds 1, 2, 3"``: the seeds of a run's agents, for messages."""
    seeds = sorted({a.seed for a in agents})
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def with_overrides(state: SACState, spec: AgentSpec) -> SACState:
    """``state`` with the agent's hyperparameter values."""
    hp = state.hparams
    changes = {k: torch.full_like(getattr(hp, k), v) for k, v in spec.overrides.items()}
    return state.replace(hparams=hp._replace(**changes))


def stack(trees: list):
    """Pytrees stacked along a new leading agent axis; a single one is returned as it is."""
    if len(trees) == 1:
        return trees[0]
    return pytree.tree_map(lambda *xs: torch.stack(xs), *trees)


def select(tree, index: int, count: int):
    """Agent ``index`` of a stacked pytree (of ``count`` agents)."""
    return tree if count == 1 else pytree.tree_map(lambda x: x[index], tree)


def vmap_agents(fn, count: int):
    """``fn`` mapped over the agent axis when there are several agents."""
    return fn if count == 1 else torch.func.vmap(fn)


def per_agent(draw, key: torch.Tensor) -> torch.Tensor:
    """``draw(k)`` for each agent's key of ``key [A, 2]``, stacked ``[A, ...]`` (no vmap for one
    agent: the same numbers, without its per-call cost)."""
    return draw(key[0]).unsqueeze(0) if key.shape[0] == 1 else torch.func.vmap(draw)(key)


def split_keys(key: torch.Tensor):
    """Each agent's key ``[A, 2]`` split in two: ``(carried [A, 2], used [A, 2])``."""
    both = per_agent(lambda k: keys.split(k, 2), key)
    return both[:, 0], both[:, 1]
