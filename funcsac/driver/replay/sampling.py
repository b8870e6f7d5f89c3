"""Drawing the learner's batches from the agents' replay buffers, mixed with offline data."""
from __future__ import annotations

from typing import List, Optional

import torch

from ... import keys
from ...batch import Batch, map_obs
from ..run.agents import stack
from .buffer import ReplayBuffer


def sample_batches(buffers: List[ReplayBuffer], offline: Optional[ReplayBuffer], key: torch.Tensor,
                   k: int, batch_size: int, offline_rows: int, gamma: torch.Tensor, beta: float):
    """Each agent's ``k`` batches of ``batch_size`` rows (``[k, B, ...]`` when ``k > 1``), stacked
    over agents, and the buffer positions of their online rows. With offline data (RLPD), each
    batch holds ``offline_rows`` rows of the shared ``offline`` buffer first, then the agent's
    own, drawn with two keys split from the agent's (``key [agents, 2]``). n-step rewards are
    discounted with each agent's ``gamma [agents]``; ``beta`` is prioritized replay's exponent."""
    off = 0 if offline is None else offline_rows
    per_step = lambda x: x.reshape(k, -1, *x.shape[1:])  # noqa: E731  [k * m] -> [k, m]
    rows, positions = [], []
    for i, buffer in enumerate(buffers):
        parts, k_online = [], key[i]
        if off:
            k_offline, k_online = keys.split(key[i], 2)
            parts.append(offline.sample(k_offline, off * k, gamma[i])[0])
        online, where = buffer.sample(k_online, (batch_size - off) * k, gamma[i], beta)
        parts.append(online)
        fields = ([torch.cat([per_step(x) for x in xs], 1) for xs in zip(*parts)] if off
                  else [map_obs(per_step, x) for x in online])  # offline data: vectors only
        rows.append(Batch(*(map_obs(lambda x: x[0], x) if k == 1 else x for x in fields)))
        positions.append(where)
    return stack(rows), positions
