"""Compiling ``update`` safely, CUDA graphs included."""
from __future__ import annotations

import torch
import torch.utils._pytree as pytree

from ...updates import update as default_update


def compile_update(fn=default_update, mode=None, **options):
    """``torch.compile(fn, fullgraph=True, mode=mode)`` made safe for ``state = step(state, b)``.

    With ``mode="reduce-overhead"`` (CUDA graphs) the outputs live in memory the next replay
    overwrites; the returned step marks each call as a new step
    (``torch.compiler.cudagraph_mark_step_begin``) and clones the outputs, so feeding them back
    is correct.
    """
    compiled = torch.compile(fn, fullgraph=True, mode=mode, **options)
    if mode != "reduce-overhead":
        return compiled

    def step(*args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        return pytree.tree_map(
            lambda x: x.clone() if isinstance(x, torch.Tensor) else x, compiled(*args, **kwargs))

    return step
