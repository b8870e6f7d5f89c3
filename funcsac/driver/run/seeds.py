"""Every seed of a run from one ``numpy.random.SeedSequence`` per agent seed, so that no two
agents with different seeds, no two sub-environments and no two purposes share a random stream,
and an agent's streams do not depend on how many other agents or environments the run has."""
from __future__ import annotations

import dataclasses

import numpy as np

# spawn keys: what each stream is for
_AGENT, _LOOP, _EVAL, _ENV = 0, 1, 2, 3


def derive_seed(seed: int, *path: int) -> int:
    """A 63-bit seed for the stream ``path`` (a tuple of purpose and indices) of ``seed``."""
    words = np.random.SeedSequence(seed, spawn_key=path).generate_state(2, np.uint32)
    return (int(words[0]) | int(words[1]) << 32) & (2**63 - 1)


@dataclasses.dataclass(frozen=True)
class AgentSeeds:
    """The seeds of one agent of a run: its initial weights and update key (``init_state``),
    its loop key (exploration noise, replay sampling), its evaluation episodes and each of its
    ``num_envs`` training environments."""

    agent: int
    loop: int
    eval: int
    envs: tuple

    @classmethod
    def of(cls, seed: int, num_envs: int, rank: int = 0) -> "AgentSeeds":
        """The seeds of agent seed ``seed`` on rank ``rank`` of a data-parallel run (0: a run of
        one process): the same weights on every rank, rank ``r``'s environments those a process
        with ``(r + 1) * num_envs`` of them would step last, and a loop key of its own."""
        loop = derive_seed(seed, _LOOP) if rank == 0 else derive_seed(seed, _LOOP, rank)
        return cls(derive_seed(seed, _AGENT), loop, derive_seed(seed, _EVAL),
                   tuple(derive_seed(seed, _ENV, rank * num_envs + i) for i in range(num_envs)))


def fresh_episode_seed(seed: int, env: int, step: int) -> int:
    """The reset seed of training env ``env`` of agent seed ``seed`` when a resumed run must start
    a fresh episode at env step ``step``."""
    return derive_seed(seed, _ENV, env, step)
