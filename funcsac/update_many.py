"""Several gradient steps in one call (update-to-data ratio > 1), as one compiled graph.

Under ``torch.compile`` the steps run in ``torch._higher_order_ops.scan``, which traces the step
once: compiling 5 unrolled steps took 421 s here against 64 s for the scan. Eagerly they run in a
Python loop.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.utils._pytree as pytree
from torch._higher_order_ops.scan import scan

from .batch import Batch
from .update import update as default_update


def make_update_many(update_fn: Callable = default_update):
    """``update_many(state, batches)`` applying ``update_fn`` once per leading index of
    ``batches`` (a ``Batch`` of ``[utd, B, ...]`` tensors), in order; returns the final state and
    each of ``update_fn``'s other outputs (the metrics and, from ``update_with_aux``, the
    per-sample aux) stacked ``[utd, ...]``. Equal to ``utd`` sequential ``update_fn`` calls."""

    def update_many(state, batches: Batch):
        if not torch.compiler.is_compiling():  # eager: a plain loop (an eager scan re-traces)
            history = []
            for i in range(batches.obs.shape[0]):
                state, *outputs = update_fn(state, Batch(*(x[i] for x in batches)))
                history.append(outputs)
            return (state, *pytree.tree_map(lambda *xs: torch.stack(xs), *history))
        leaves, spec = pytree.tree_flatten(state)

        def step(carry, batch):
            new_state, *outputs = update_fn(pytree.tree_unflatten(carry, spec), Batch(*batch))
            # scan forbids returning an input unchanged (aliasing), so copy; inductor fuses the
            # copies of freshly computed leaves away, leaving only those passed through
            return [x.clone() for x in pytree.tree_leaves(new_state)], outputs

        final, outputs = scan(step, leaves, tuple(batches))
        return (pytree.tree_unflatten(final, spec), *outputs)

    return update_many


update_many = make_update_many()
