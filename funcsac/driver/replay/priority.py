"""Priorities for prioritized replay (Schaul et al. 2016): a sum tree on the training device and
the importance weights that correct for sampling by priority."""
from __future__ import annotations

import torch

from ... import keys


class PriorityTree:
    """Sum tree of ``capacity`` non-negative float64 priorities on ``device``.

    Stored level by level as flat tensors: level 0 holds the leaves, padded with zeros to a
    multiple of ``fanout ** L``; level ``l + 1`` holds the sums of the blocks of ``fanout`` nodes of
    level ``l``; the levels stop at the first with at most ``top`` nodes (``L`` levels above the
    leaves). A draw searches the prefix sums of that top level, then descends ``L`` levels of
    ``fanout`` children, so a batch of draws costs a few dozen small tensor ops whatever the
    capacity. Each internal node is always recomputed as the sum of its children, never updated
    by deltas, so the tree is a deterministic function of its leaves.
    """

    def __init__(self, capacity: int, device, fanout: int = 32, top: int = 1024):
        if int(capacity) < 1:
            raise ValueError(f"PriorityTree capacity must be >= 1, got {capacity}")
        if int(fanout) < 2:
            raise ValueError(f"PriorityTree fanout must be >= 2, got {fanout}")
        if int(top) < 1:
            raise ValueError(f"PriorityTree top must be >= 1, got {top}")
        self.capacity, self.fanout, self.device = int(capacity), int(fanout), torch.device(device)
        depth = 0
        while -(-self.capacity // self.fanout ** depth) > top:
            depth += 1
        nodes = -(-self.capacity // self.fanout ** depth)  # of the top level
        self.levels = [torch.zeros(nodes * self.fanout ** (depth - level), dtype=torch.float64,
                                   device=self.device) for level in range(depth + 1)]
        self._zero = torch.zeros((), dtype=torch.float64, device=self.device)
        self._strata = {}  # n -> arange(n), float64

    @property
    def leaves(self) -> torch.Tensor:
        """The priorities, a ``[capacity]`` float64 view."""
        return self.levels[0][:self.capacity]

    @property
    def total(self) -> torch.Tensor:
        """The sum of all priorities, a 0-d tensor (no host sync); the one draws divide by."""
        return self.levels[-1].cumsum(0)[-1]

    def _children(self, level: int, parents: torch.Tensor) -> torch.Tensor:
        """The children of nodes ``parents [k]`` of level ``level + 1``, ``[k, fanout]``."""
        return self.levels[level].view(-1, self.fanout).index_select(0, parents)

    def _recompute(self, parents: torch.Tensor) -> None:
        """Recompute the nodes of level 1 ``parents [k]`` and all their ancestors, level by level,
        each as the sum of its children (indices may repeat: repeats write equal values)."""
        for level in range(len(self.levels) - 1):
            self.levels[level + 1].index_copy_(0, parents, self._children(level, parents).sum(-1))
            parents = parents // self.fanout

    def _check(self, priority: torch.Tensor, index: torch.Tensor | None = None) -> None:
        """ValueError for a negative or non-finite priority or an index out of range (one sync)."""
        ends = list(torch.aminmax(priority))  # a nan makes both nan
        if index is not None:
            ends += [x.to(priority.dtype) for x in torch.aminmax(index)]
        low, high, *positions = torch.stack(ends).tolist()
        if not (low >= 0 and high < float("inf")):
            raise ValueError("priorities must be finite and >= 0, got a negative, inf or nan one")
        if positions and not (positions[0] >= 0 and positions[1] < self.capacity):
            raise ValueError(f"priority indices must lie in [0, {self.capacity})")

    def set(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Set the leaves ``index [k]`` (integers) to ``priority [k]`` (>= 0, cast to float64) and
        recompute their ancestors. A repeated index takes its last occurrence's priority."""
        index = torch.as_tensor(index, device=self.device).long()
        priority = torch.as_tensor(priority, device=self.device).to(torch.float64)
        if index.dim() != 1 or priority.shape != index.shape:
            raise ValueError(f"set needs index [k] and priority [k], got shapes "
                             f"{tuple(index.shape)} and {tuple(priority.shape)}")
        if index.numel() == 0:
            return
        self._check(priority, index)
        index, order = torch.sort(index, stable=True)  # repeats keep their call order
        last = torch.searchsorted(index, index, right=True) - 1  # each repeat's last occurrence
        self.levels[0].index_copy_(0, index, priority[order[last]])
        self._recompute(index // self.fanout)

    def load(self, leaves: torch.Tensor) -> None:
        """Replace all priorities by ``leaves [capacity]`` and rebuild every level (with the code
        ``set`` uses, so the tree equals one built by ``set`` bit for bit)."""
        leaves = torch.as_tensor(leaves, device=self.device).to(torch.float64)
        if leaves.shape != (self.capacity,):
            raise ValueError(f"load needs leaves of shape ({self.capacity},), "
                             f"got {tuple(leaves.shape)}")
        self._check(leaves)
        self.levels[0][:self.capacity] = leaves
        self._recompute(torch.arange(self.levels[0].numel() // self.fanout, device=self.device))

    def sample(self, key: torch.Tensor, n: int) -> tuple:
        """``n`` stratified draws: draw ``i`` is the leaf whose cumulative-sum bracket holds
        ``(i + U_i) / n * total``, ``U_i`` uniform from ``key``. Returns ``(index [n] int64,
        probability [n] float64)``, the probability being ``leaf / total``; a leaf of zero priority
        is never drawn. Raises ValueError when the total is 0."""
        top = self.levels[-1]
        prefix = top.cumsum(0)
        total = prefix[-1]
        if not total.item() > 0:
            raise ValueError("cannot sample from a PriorityTree whose priorities are all 0")
        zero = self._zero
        if n not in self._strata:
            self._strata[n] = torch.arange(n, device=self.device, dtype=torch.float64)
        u = (self._strata[n] + keys.uniform(key, (n,), torch.float64).to(self.device)) / n * total
        # below the total, so the chosen node's bracket is non-empty
        node = torch.searchsorted(prefix, torch.minimum(u, torch.nextafter(total, zero)),
                                  right=True)  # the count of prefix sums <= u
        # u within the chosen node's bracket: u minus the sum of the nodes before it, at least 0
        # (a rounding of that sum can exceed u by an ulp)
        u = (u - (prefix - top)[node]).clamp_min(0)[:, None]
        for level in range(len(self.levels) - 2, -1, -1):
            children = self._children(level, node)
            cum = children.cumsum(-1)
            u = torch.minimum(u, torch.nextafter(cum[:, -1:], zero))
            child = torch.searchsorted(cum, u, right=True)  # the count of cum <= u, [n, 1]
            u = (u - (cum - children).gather(1, child)).clamp_min(0)
            node = node * self.fanout + child[:, 0]
        return node, self.levels[0][node] / total


def importance_weights(probability: torch.Tensor, size: int, beta) -> torch.Tensor:
    """Importance-sampling weights ``(size * P(i)) ** -beta`` of draws of probabilities
    ``probability [n]`` from ``size`` items, divided by the largest, ``[n]`` float64; ``beta`` a
    float or a 0-d tensor."""
    weights = (size * probability.to(torch.float64)) ** -torch.as_tensor(beta, dtype=torch.float64)
    return weights / weights.max()
