"""A replay buffer of preallocated tensors on the training device: uniform or prioritized
sampling, one-step or n-step transitions."""
from __future__ import annotations

from typing import Dict, Optional

import torch

from ... import keys
from ...batch import Batch
from .priority import PriorityTree, importance_weights

Rows = Dict[str, torch.Tensor]


def row_shapes(obs_shape, act_dim: int, n_step: int = 1) -> Dict[str, tuple]:
    """Each stored field's shape per row (``obs_shape``: an observation's shape, or its size; a
    dict observation's ``{key: shape}``, whose entries are stored as ``"obs.<key>"`` and
    ``"next_obs.<key>"``). An n-step row keeps its ``n_step`` rewards (zero after its
    ``horizon``, the steps it spans), so the discounted sum is taken at sampling time with the
    agent's current gamma."""
    obs = _obs_fields(obs_shape, lambda shape: (shape,) if isinstance(shape, int) else
                      tuple(shape))
    shapes = {**obs("obs"), "action": (act_dim,), "reward": (), **obs("next_obs"),
              "terminated": ()}
    if n_step > 1:
        shapes.update(reward=(n_step,), horizon=())
    return shapes


def _obs_fields(per_obs, value):
    """``field -> {stored name: value(entry)}`` for an observation's ``per_obs`` (one entry, or
    a dict of them)."""
    if isinstance(per_obs, dict):
        return lambda field: {f"{field}.{k}": value(v) for k, v in per_obs.items()}
    return lambda field: {field: value(per_obs)}


def flat_rows(rows: dict) -> Rows:
    """``rows`` with their dict observations flattened to the stored names (``row_shapes``)."""
    flat = {}
    for k, v in rows.items():
        flat.update({f"{k}.{e}": x for e, x in v.items()} if isinstance(v, dict) else {k: v})
    return flat


def _observations(rows: Rows, field: str):
    """The observation ``field`` of sampled rows: a tensor, or a dict of its entries."""
    if field in rows:
        return rows[field]
    prefix = field + "."
    return {k[len(prefix):]: v for k, v in rows.items() if k.startswith(prefix)}


class ReplayBuffer:
    """Ring buffer of ``capacity`` transitions; the oldest rows are overwritten first.

    Rows are numbered by insertion: ``added`` rows have been written in all, and row ``t`` (for
    ``added - size <= t < added``) lives at position ``t % capacity``. With ``priority``
    (prioritized replay's ``(alpha, epsilon)``), rows are drawn in proportion to their priority
    ``(|td_error| + epsilon) ** alpha``; a new row gets the largest priority given so far.
    Observations are kept in ``obs_dtype`` (default ``dtype``; ``uint8`` for images; a dict
    observation's ``{key: dtype}``, as ``obs_shape`` is ``{key: shape}``), the other fields in
    ``dtype``.
    Priority writes wait in a queue and reach the tree in one ``set`` just before the next draw
    (or checkpoint), in the order they were made.
    """

    def __init__(self, capacity: int, obs_shape, act_dim: int, device, dtype=torch.float32,
                 n_step: int = 1, priority: Optional[tuple] = None, obs_dtype=None):
        self.capacity, self.n_step, self.priority = capacity, n_step, priority
        obs = _obs_fields(obs_dtype or dtype, lambda d: d)
        dtypes = {**obs("obs"), **obs("next_obs")}
        self.data = {k: torch.zeros(capacity, *shape, device=device, dtype=dtypes.get(k, dtype))
                     for k, shape in row_shapes(obs_shape, act_dim, n_step).items()}
        self.tree = PriorityTree(capacity, device) if priority else None
        self.max_priority = torch.ones((), dtype=torch.float64, device=device)
        self.pending = []  # (positions [k], priorities [k]) not yet in the tree
        self.added = 0

    @property
    def size(self) -> int:
        return min(self.added, self.capacity)

    @property
    def oldest(self) -> int:
        """The number of the oldest row still held."""
        return self.added - self.size

    def _positions(self, start: int, stop: int) -> torch.Tensor:
        return (torch.arange(start, stop) % self.capacity).to(self.data["reward"].device)

    def add(self, rows: dict) -> None:
        """Append rows (a dict of the stored fields, leading axis n; dict observations as dicts
        or flattened, ``flat_rows``); tensors are copied to the buffer's device and dtype."""
        rows = flat_rows(rows)
        n = len(rows["reward"])
        keep = min(n, self.capacity)
        self.write(self.added + n - keep, {k: v[n - keep:] for k, v in rows.items()})
        if self.tree is not None:
            self.pending.append((self._positions(self.added + n - keep, self.added + n),
                                 self.max_priority.expand(keep)))
        self.added += n

    def write(self, start: int, rows: Rows) -> None:
        """Store ``rows`` as rows ``start, start + 1, ...`` (at most ``capacity`` of them)."""
        n, first = len(rows["reward"]), start % self.capacity
        where = (slice(first, first + n) if first + n <= self.capacity
                 else self._positions(start, start + n))
        for k, store in self.data.items():
            store[where] = torch.as_tensor(rows[k]).to(device=store.device, dtype=store.dtype)

    def rows(self, start: int, stop: int) -> Rows:
        """Rows ``start .. stop - 1`` (all still held) in insertion order, on the CPU."""
        if not self.oldest <= start <= stop <= self.added:
            raise ValueError(f"rows {start}..{stop} are not held (held: {self.oldest}.."
                             f"{self.added})")
        idx = self._positions(start, stop)
        return {k: x[idx].cpu() for k, x in self.data.items()}

    def sample(self, key: torch.Tensor, batch_size: int, gamma: Optional[torch.Tensor] = None,
               beta=1.0):
        """``batch_size`` rows drawn with replacement with ``key``: uniformly, or by priority
        with importance weights ``(size * P) ** -beta`` (normalised by their max) in
        ``Batch.weight``. An n-step row's reward is ``sum_k gamma^k r_k`` (``gamma`` a 0-d
        tensor). Returns ``(batch, positions [batch_size])``."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        weight = None
        if self.tree is None:
            idx = keys.randint(key, (batch_size,), self.size)
        else:
            self._flush()
            idx, prob = self.tree.sample(key, batch_size)
            weight = importance_weights(prob, self.size, beta).to(self.data["reward"].dtype)
        # index_select: half the time of x[idx] for a few hundred rows
        rows = {k: torch.index_select(x, 0, idx) for k, x in self.data.items()}
        reward, horizon = rows["reward"], rows.get("horizon")
        if self.n_step > 1:
            powers = torch.arange(self.n_step, device=reward.device, dtype=reward.dtype)
            reward = (reward * gamma ** powers).sum(-1)
        return Batch(_observations(rows, "obs"), rows["action"], reward,
                     _observations(rows, "next_obs"), rows["terminated"], horizon, weight), idx

    def set_priorities(self, positions: torch.Tensor, td_error: torch.Tensor) -> None:
        """New priorities ``(|td_error| + epsilon) ** alpha`` of the rows at ``positions``."""
        alpha, epsilon = self.priority
        p = (td_error.detach().abs().to(torch.float64) + epsilon) ** alpha
        self.pending.append((positions, p))
        self.max_priority = torch.maximum(self.max_priority, p.max())

    def _flush(self) -> None:
        """Write the queued priorities to the tree, in order (one ``set``)."""
        if self.pending:
            positions, priorities = zip(*self.pending)
            self.pending = []
            self.tree.set(torch.cat(positions), torch.cat(priorities))

    def priority_state(self) -> dict:
        """What a checkpoint keeps of the priorities (empty without prioritized replay)."""
        if self.tree is None:
            return {}
        self._flush()
        return {"priorities": self.tree.leaves.cpu().clone(),
                "max_priority": self.max_priority.cpu()}

    def load_priority_state(self, saved: dict) -> None:
        """Restore ``priority_state()`` exactly (the tree is rebuilt from its leaves)."""
        if self.tree is not None:
            self.pending = []
            self.tree.load(saved["priorities"].to(self.max_priority.device))
            self.max_priority = saved["max_priority"].to(self.max_priority.device)
