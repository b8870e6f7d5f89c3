"""Data-parallel SAC over ``torch.distributed``: ranks that hold the same state, each with its own
batch, take the same gradient step.

``parallel_losses`` turns an algorithm's ``Losses`` into the data-parallel ones: each loss
draws its per-row randomness (next actions, policy samples, dropout masks, a critic subset)
from its key folded with the rank, and each step's gradients and new buffers (a batch
normalisation's running statistics) are averaged over the ranks with one all-reduce before the
optimiser takes them (``mean_over_ranks``), so every rank's new state is the same. Averaged
gradients of equal-sized batches are the gradients of their union; a batch normalisation's batch
statistics are each rank's own (as in ``DistributedDataParallel`` without ``SyncBatchNorm``).

The collective is ``torch.distributed._functional_collectives.all_reduce``: out of place, so the
update stays a pure function, and traced by ``torch.compile(fullgraph=True)``. An update mapped
with ``torch.func.vmap`` (several agents) cannot take it.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import optree
import torch
import torch.distributed as dist
import torch.utils._pytree as pytree

from . import keys
from .losses import Losses
from .registry import NAMESPACE


@dataclasses.dataclass(frozen=True)
class Ranks:
    """Where this process stands among the ranks: ``rank`` of ``world``, whose collectives run in
    ``group`` (None: the default process group)."""

    rank: int = 0
    world: int = 1
    group: Any = None

    @classmethod
    def current(cls, group=None) -> "Ranks":
        """This process's place in ``group`` (default: the default process group); a world of one
        when ``torch.distributed`` is not initialised."""
        if not (dist.is_available() and dist.is_initialized()):
            return cls()
        return cls(dist.get_rank(group), dist.get_world_size(group), group)


def mean_over_ranks(tree, ranks: Ranks):
    """Each tensor of ``tree`` replaced by its mean over the ranks (the same on every rank), in
    one all-reduce of all of them (cast to the widest dtype among them and back); ``tree`` itself
    in a world of one."""
    if ranks.world == 1:
        return tree
    leaves, spec = pytree.tree_flatten(tree)
    if not leaves:
        return tree
    import torch.distributed._functional_collectives as collectives

    wide = functools.reduce(torch.promote_types, (t.dtype for t in leaves))
    flat = torch.cat([t.reshape(-1).to(wide) for t in leaves])
    flat = collectives.all_reduce(flat, "sum", ranks.group or dist.group.WORLD) / ranks.world
    parts = torch.split(flat, [t.numel() for t in leaves])
    return pytree.tree_unflatten([p.reshape(t.shape).to(t.dtype)
                                  for p, t in zip(parts, leaves)], spec)


def _with_rank_key(loss: Callable, rank: int) -> Callable:
    """``loss`` with its last argument, a key, folded with ``rank``."""
    def folded(*args):
        return loss(*args[:-1], keys.fold_in(args[-1], rank))
    folded.__qualname__ = getattr(loss, "__qualname__", "loss")
    folded.__module__ = getattr(loss, "__module__", None)
    return folded


def parallel_losses(losses: Losses, ranks: Ranks) -> Losses:
    """``losses`` for one rank of a data-parallel update: its keys folded with the rank, its
    gradients and new buffers averaged over the ranks (``Losses.combine``); ``losses`` itself in
    a world of one."""
    if ranks.world == 1:
        return losses
    return losses.replace(target=_with_rank_key(losses.target, ranks.rank),
                          critic=_with_rank_key(losses.critic, ranks.rank),
                          actor=_with_rank_key(losses.actor, ranks.rank),
                          combine=lambda tree: mean_over_ranks(tree, ranks))


def state_digest(tree) -> torch.Tensor:
    """A float64 fingerprint ``[2]`` of the tensors of ``tree`` (the sum and the sum of squares
    of every entry, each weighted by its position): equal states give equal digests, so ranks
    compare states by comparing these."""
    leaves = optree.tree_leaves(tree, namespace=NAMESPACE)
    total = torch.zeros(2, dtype=torch.float64)
    for t in leaves:
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.dtype == torch.int64):
            x = t.detach().reshape(-1).to(device="cpu", dtype=torch.float64)
            w = torch.arange(1, x.numel() + 1, dtype=torch.float64)
            total += torch.stack([(w * x).sum(), (w * x.square()).sum()])
    return total
