"""How a stored function takes its arguments and gives its output: flattened with their
signature (structure, shapes, dtypes, devices), contiguous, 0-d float64 tensors as ``[1]``, and
its output rebuilt outside it, each state's static fields the caller's."""
from __future__ import annotations

from typing import Callable

import optree
import torch
import torch.utils._cxx_pytree as cxx_pytree  # optree's speed, and dynamo traces it
from torch._subclasses import FakeTensorMode

from ...registry import NAMESPACE
from ...state import SACState


def _is_float64_scalar(x) -> bool:
    """A 0-d float64 tensor: which a stored function takes as ``[1]`` (``_as_compiled``). Inside
    an ahead-of-time compile torch 2.13 turns such an input on the CPU into a symbolic float and
    then gives up (TensorifyScalarRestartAnalysis): a float64 agent's hyperparameters, the
    running statistics of the return."""
    return isinstance(x, torch.Tensor) and x.dim() == 0 and x.dtype == torch.float64


def _leaves_of(fn: Callable, args: tuple) -> Callable:
    """``fn`` for ``args`` as ``_as_compiled`` gives them (its 0-d float64 tensors as ``[1]``,
    made 0-d again first), returning the tensors of its output as a flat tuple. What a stored
    function returns is rebuilt outside it (``StoredFunction``): torch 2.13's saved bytecode
    finds the class of a pytree output by its position among the pytree types registered in the
    process, which differs from one process to another (importing ``torch.distributed.tensor``
    before funcsac turned a loaded update's ``SACState`` into another class)."""
    scalars = frozenset(i for i, x in enumerate(cxx_pytree.tree_leaves(args))
                        if _is_float64_scalar(x))

    def leaves(*lifted):
        if scalars:
            flat, spec = cxx_pytree.tree_flatten(lifted)
            lifted = cxx_pytree.tree_unflatten(
                [x.reshape(()) if i in scalars else x for i, x in enumerate(flat)], spec)
        return tuple(cxx_pytree.tree_leaves(fn(*lifted)))
    return leaves


def _output_structure(fn: Callable, args: tuple):
    """The pytree structure of ``fn(*args)``, found with fake tensors (no arithmetic), each
    state's static fields left out (``StoredFunction`` puts the caller's back)."""
    with FakeTensorMode() as mode:
        fake = optree.tree_map(lambda x: mode.from_tensor(x) if isinstance(x, torch.Tensor)
                               else x, args, namespace=NAMESPACE)
        out = fn(*fake)
    return cxx_pytree.tree_structure(_with_static(out, None))


def signature(args) -> tuple:
    """What a compiled function is specialised to: the pytree structure of ``args`` and each
    tensor leaf's shape, dtype and device (non-tensor leaves by value)."""
    return _flatten(args)[1]


def _flatten(args) -> tuple:
    """``(leaves, signature(args))``, in one optree pass (a third of torch pytree's cost)."""
    leaves, spec = optree.tree_flatten(args, namespace=NAMESPACE)
    return leaves, (spec, tuple((x.shape, x.dtype, x.device) if isinstance(x, torch.Tensor)
                                else x for x in leaves))


def _as_compiled(flat):
    """``args`` (flattened by ``_flatten``) as a stored function takes them: every tensor
    contiguous (it does not check strides itself), each 0-d float64 tensor as ``[1]``
    (``_is_float64_scalar``)."""
    leaves, (spec, _) = flat
    return optree.tree_unflatten(spec, [
        x.reshape(1) if _is_float64_scalar(x) else
        x.contiguous() if isinstance(x, torch.Tensor) else x for x in leaves])


def _with_static(tree, static):
    """``tree`` (a state, or a tuple holding states) with each state's ``static`` replaced."""
    if isinstance(tree, SACState):
        return tree.replace(static=static)
    if type(tree) is tuple:
        return tuple(_with_static(x, static) for x in tree)
    return tree


def _first_static(args):
    return next((x.static for x in args if isinstance(x, SACState)), None)
