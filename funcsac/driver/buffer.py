"""A uniform replay buffer of preallocated tensors on the training device."""
from __future__ import annotations

import torch

from .. import keys
from ..batch import Batch


class ReplayBuffer:
    """Ring buffer of ``capacity`` transitions; the oldest rows are overwritten first.

    Rows are numbered by insertion: ``added`` rows have been written in all, and row ``t`` (for
    ``added - size <= t < added``) lives at position ``t % capacity``.
    """

    def __init__(self, capacity: int, obs_dim: int, act_dim: int, device, dtype=torch.float32):
        self.capacity = capacity
        make = lambda *shape: torch.zeros(capacity, *shape, device=device, dtype=dtype)  # noqa: E731
        self.data = Batch(obs=make(obs_dim), action=make(act_dim), reward=make(),
                          next_obs=make(obs_dim), terminated=make())
        self.added = 0

    @property
    def size(self) -> int:
        return min(self.added, self.capacity)

    @property
    def oldest(self) -> int:
        """The number of the oldest row still held."""
        return self.added - self.size

    def _positions(self, start: int, stop: int) -> torch.Tensor:
        return (torch.arange(start, stop) % self.capacity).to(self.data.obs.device)

    def add(self, rows: Batch) -> None:
        """Append rows (leading axis n); tensors are copied to the buffer's device and dtype."""
        n = rows.obs.shape[0]
        self.write(self.added + n - min(n, self.capacity),
                   Batch(*(x[n - min(n, self.capacity):] for x in rows)))
        self.added += n

    def write(self, start: int, rows: Batch) -> None:
        """Store ``rows`` as rows ``start, start + 1, ...`` (at most ``capacity`` of them)."""
        n, first = rows.obs.shape[0], start % self.capacity
        where = (slice(first, first + n) if first + n <= self.capacity
                 else self._positions(start, start + n))
        for store, x in zip(self.data, rows):
            store[where] = torch.as_tensor(x).to(device=store.device, dtype=store.dtype)

    def rows(self, start: int, stop: int) -> Batch:
        """Rows ``start .. stop - 1`` (all still held) in insertion order, on the CPU."""
        if not self.oldest <= start <= stop <= self.added:
            raise ValueError(f"rows {start}..{stop} are not held (held: {self.oldest}.."
                             f"{self.added})")
        idx = self._positions(start, stop)
        return Batch(*(x[idx].cpu() for x in self.data))

    def sample(self, key: torch.Tensor, batch_size: int) -> Batch:
        """``batch_size`` rows drawn uniformly with replacement, indices from ``key``."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = keys.randint(key, (batch_size,), self.size)
        return Batch(*(x[idx] for x in self.data))
