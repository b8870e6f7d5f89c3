"""A replay buffer of tensors on the training device, which grow with the rows added: uniform
or prioritized sampling, one-step or n-step transitions."""
from __future__ import annotations

import math
from typing import Dict, Optional

import torch

from ... import keys
from ...batch import Batch
from .frames import FrameStacks
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
    ``first_held <= t < added``) lives at position ``t % slots``; draws come from the newest
    ``size`` of them (``oldest <= t``). With ``priority``
    (prioritized replay's ``(alpha, epsilon)``), rows are drawn in proportion to their priority
    ``(|td_error| + epsilon) ** alpha``; a new row gets the largest priority given so far.
    Observations are kept in ``obs_dtype`` (default ``dtype``; ``uint8`` for images; a dict
    observation's ``{key: dtype}``, as ``obs_shape`` is ``{key: shape}``), the other fields in
    ``dtype``. With ``frames`` (``FrameStacks``), stacked frames are not kept whole: a row holds
    its newest frames and a link to the row before it, and ``slots`` is ``capacity`` plus
    ``frames.margin`` rows, held (not drawn) for the oldest drawn rows' stacks; else ``slots`` is
    ``capacity``.
    Storage grows as rows arrive, up to ``slots`` rows.
    Priority writes wait in a queue and reach the tree in one ``set`` just before the next draw
    (or checkpoint), in the order they were made.
    """

    def __init__(self, capacity: int, obs_shape, act_dim: int, device, dtype=torch.float32,
                 n_step: int = 1, priority: Optional[tuple] = None, obs_dtype=None,
                 frames: Optional[FrameStacks] = None):
        self.capacity, self.n_step, self.priority, self.frames = capacity, n_step, priority, frames
        self.slots = capacity + (frames.margin if frames else 0)  # the rows held
        obs = _obs_fields(obs_dtype or dtype, lambda d: d)
        dtypes = {**obs("obs"), **obs("next_obs"), "prev": torch.int64, "stream": torch.int64}
        shapes = row_shapes(obs_shape, act_dim, n_step)
        shapes = frames.stored_shapes(shapes) if frames else shapes
        # allocated as rows arrive (``_grow``): a run's memory follows the rows it has added
        self.data = {k: torch.zeros(0, *shape, device=device, dtype=dtypes.get(k, dtype))
                     for k, shape in shapes.items()}
        self.tree = PriorityTree(self.slots, device) if priority else None
        self.max_priority = torch.ones((), dtype=torch.float64, device=device)
        self.pending = []  # (positions [k], priorities [k]) not yet in the tree
        self.added = 0
        self._ends, self._ends_at = {}, 0  # frames: _stream_ends() as of added == _ends_at

    @property
    def size(self) -> int:
        """The rows drawn from: the newest ``capacity``."""
        return min(self.added, self.capacity)

    @property
    def oldest(self) -> int:
        """The number of the oldest row drawn from."""
        return self.added - self.size

    @property
    def first_held(self) -> int:
        """The number of the oldest row held (``oldest`` less the frames' margin)."""
        return self.added - min(self.added, self.slots)

    def _positions(self, start: int, stop: int) -> torch.Tensor:
        return (torch.arange(start, stop) % self.slots).to(self.data["reward"].device)

    def add(self, rows: dict, streams=None) -> None:
        """Append rows (a dict of the stored fields, leading axis n; dict observations as dicts
        or flattened, ``flat_rows``); tensors are copied to the buffer's device and dtype. With
        frames, ``streams [n]`` numbers the environment of each row (default: a new one each)."""
        rows = flat_rows(rows)
        n, oldest = len(rows["reward"]), self.oldest
        if self.frames is not None:
            streams = torch.arange(n) if streams is None else torch.as_tensor(streams)
            rows, ends = self.frames.encode(rows, streams, self.added, self._stream_ends())
        keep = min(n, self.slots)
        self.write(self.added + n - keep, {k: v[n - keep:] for k, v in rows.items()})
        if self.tree is not None:
            if self.slots > self.capacity:  # rows out of the drawn ones but held: priority 0
                start = max(oldest, self.added + n - self.slots)
                out = self._positions(start, max(start, self.added + n - self.capacity))
                self.pending.append((out, torch.zeros_like(out, dtype=torch.float64)))
            self.pending.append((self._positions(self.added + n - keep, self.added + n),
                                 self.max_priority.expand(keep)))
        self.added += n
        if self.frames is not None:
            self._ends, self._ends_at = ends, self.added

    @property
    def row_bytes(self) -> int:
        """The bytes one held row takes, all fields together."""
        return sum(math.prod(x.shape[1:]) * x.element_size() for x in self.data.values())

    def _grow(self, rows: int) -> None:
        """Room for positions ``0 .. rows - 1``: the storage at least doubles each time it grows
        (zeros, as a full allocation would hold), up to ``slots`` rows."""
        held = len(self.data["reward"])
        if rows > held:
            new = min(self.slots, max(rows, 2 * held, 1024))
            self.data = {k: torch.cat([x, x.new_zeros(new - held, *x.shape[1:])])
                         for k, x in self.data.items()}

    def write(self, start: int, rows: Rows) -> None:
        """Store ``rows`` as rows ``start, start + 1, ...`` (at most ``slots`` of them)."""
        n, first = len(rows["reward"]), start % self.slots
        self._grow(first + n)
        where = (slice(first, first + n) if first + n <= self.slots
                 else self._positions(start, start + n))
        for k, store in self.data.items():
            store[where] = torch.as_tensor(rows[k]).to(device=store.device, dtype=store.dtype)

    def rows(self, start: int, stop: int) -> Rows:
        """Rows ``start .. stop - 1`` (all still held) in insertion order, on the CPU, as the
        buffer keeps them."""
        if not self.first_held <= start <= stop <= self.added:
            raise ValueError(f"rows {start}..{stop} are not held (held: {self.first_held}.."
                             f"{self.added})")
        idx = self._positions(start, stop)
        return {k: x[idx].cpu() for k, x in self.data.items()}

    def _gather(self, idx: torch.Tensor) -> Rows:
        """The rows at positions ``idx [B]``, their frames stacked."""
        # index_select: half the time of x[idx] for a few hundred rows
        rows = {k: torch.index_select(x, 0, idx) for k, x in self.data.items()
                if k not in ("prev", "stream")}
        return rows if self.frames is None else self.frames.stacks(self.data, rows, idx,
                                                                   self.slots)

    def _stream_ends(self) -> dict:
        """Each environment's newest row and that row's next observation (CPU), rebuilt from the
        held rows after they were restored (``write``)."""
        if self._ends_at != self.added:
            rows = torch.arange(self.first_held, self.added)
            streams = self.data["stream"][self._positions(self.first_held, self.added)].cpu()
            newest = [int(rows[streams == s].max()) for s in streams.unique().tolist()]
            at = torch.tensor(newest, dtype=torch.int64) % self.slots
            stacks = self._gather(at.to(self.data["reward"].device))[self.frames.next_field].cpu()
            self._ends = {int(streams[r - self.first_held]): (r, stacks[i])
                          for i, r in enumerate(newest)}
            self._ends_at = self.added
        return self._ends

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
            if self.slots > self.capacity:  # the newest capacity rows of those held
                idx = (idx + self.oldest) % self.slots
        else:
            self._flush()
            idx, prob = self.tree.sample(key, batch_size)
            weight = importance_weights(prob, self.size, beta).to(self.data["reward"].dtype)
        rows = self._gather(idx)
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
        if self.slots > self.capacity:  # a row no longer drawn from since its draw keeps 0
            row = self.first_held + (positions - self.first_held) % self.slots
            p = torch.where(row >= self.oldest, p, 0.0)
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
