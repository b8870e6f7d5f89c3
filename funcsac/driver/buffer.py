"""A uniform replay buffer of preallocated tensors on the training device."""
from __future__ import annotations

import torch

from .. import keys
from ..batch import Batch


class ReplayBuffer:
    """Ring buffer of ``capacity`` transitions; the oldest rows are overwritten first."""

    def __init__(self, capacity: int, obs_dim: int, act_dim: int, device, dtype=torch.float32):
        self.capacity = capacity
        make = lambda *shape: torch.zeros(capacity, *shape, device=device, dtype=dtype)  # noqa: E731
        self.data = Batch(obs=make(obs_dim), action=make(act_dim), reward=make(),
                          next_obs=make(obs_dim), terminated=make())
        self.ptr = 0
        self.size = 0

    def add(self, rows: Batch) -> None:
        """Append rows (leading axis n); tensors are copied to the buffer's device and dtype."""
        n = rows.obs.shape[0]
        if n > self.capacity:
            rows = Batch(*(x[-self.capacity:] for x in rows))
            n = self.capacity
        idx = (torch.arange(n) + self.ptr) % self.capacity
        idx = idx.to(self.data.obs.device)
        for store, x in zip(self.data, rows):
            store[idx] = torch.as_tensor(x).to(device=store.device, dtype=store.dtype)
        self.ptr = (self.ptr + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, key: torch.Tensor, batch_size: int) -> Batch:
        """``batch_size`` rows drawn uniformly with replacement, indices from ``key``."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = keys.randint(key, (batch_size,), self.size)
        return Batch(*(x[idx] for x in self.data))

    def state_dict(self) -> dict:
        """The filled rows and the write pointer (for checkpoints)."""
        return {"capacity": self.capacity, "ptr": self.ptr, "size": self.size,
                "data": {k: v[: self.size].cpu() for k, v in self.data._asdict().items()}}

    def load_state_dict(self, sd: dict) -> None:
        if sd["capacity"] != self.capacity:
            raise ValueError(f"checkpoint buffer capacity {sd['capacity']} != {self.capacity}")
        for k, store in self.data._asdict().items():
            rows = sd["data"][k]
            if rows.shape[1:] != store.shape[1:]:
                raise ValueError(f"checkpoint buffer field {k} has rows of shape "
                                 f"{list(rows.shape[1:])}, expected {list(store.shape[1:])}")
            store[: sd["size"]] = rows.to(store.device, store.dtype)
        self.ptr, self.size = sd["ptr"], sd["size"]
