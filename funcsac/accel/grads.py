"""Gradients of a loss with respect to a parameter pytree, as ``torch.func.grad_and_value``
computes them, on plain autograd where nothing needs the function transform."""
from __future__ import annotations

from typing import Callable

import optree
import torch

from ..registry import NAMESPACE


def untransformed() -> bool:
    """True when nothing is being compiled and no function transform (``vmap``, ``grad``, ...)
    wraps the call: the tensors seen are the caller's own, so plain autograd gives what
    ``torch.func`` would."""
    return (not torch.compiler.is_compiling()
            and torch._C._functorch.peek_interpreter_stack() is None)


def _needs_transform(params, args) -> bool:
    """Whether a gradient must go through ``torch.func``: while compiling, inside a function
    transform (``vmap``, ``grad``), under ``torch.inference_mode`` (where autograd records
    nothing), or when an input is itself tracked by autograd (a caller differentiating through
    the update)."""
    if not untransformed() or torch.is_inference_mode_enabled():
        return True
    leaves = optree.tree_leaves((params, args), none_is_leaf=False, namespace=NAMESPACE)
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in leaves)


def _detached(tree):
    return optree.tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, tree,
                           namespace=NAMESPACE)


def grad_and_value(loss_fn: Callable) -> Callable:
    """``torch.func.grad_and_value(loss_fn, has_aux=True)``: ``(params, *args) -> (grads,
    (loss, aux))``, ``grads`` shaped like ``params`` (zeros where the loss does not depend on an
    entry), ``loss`` and ``aux`` detached.

    Eager calls outside any transform take a tensor copy of each parameter that requires grad and
    call ``torch.autograd.grad`` on it: the same operations and numbers, without functorch
    wrapping every operation of the forward and backward passes (what it saves:
    ``bench/studies/paths.py``, figures in bench/results/RESULTS.md). Compiled code, calls under
    ``vmap`` or
    ``grad``, and calls whose inputs are tracked by autograd take ``torch.func`` itself.
    """
    transformed = torch.func.grad_and_value(loss_fn, has_aux=True)

    def run(params, *args):
        if _needs_transform(params, args):
            return transformed(params, *args)
        leaves, spec = optree.tree_flatten(params, namespace=NAMESPACE)
        with torch.enable_grad():
            live = [t.detach().requires_grad_() for t in leaves]
            loss, aux = loss_fn(optree.tree_unflatten(spec, live), *args)
            if loss.requires_grad:
                grads = torch.autograd.grad(loss, live, allow_unused=True,
                                            materialize_grads=True)
            else:
                grads = [torch.zeros_like(t) for t in leaves]
        return optree.tree_unflatten(spec, list(grads)), (loss.detach(), _detached(aux))

    return run
