"""Whether code runs plainly: eagerly and outside any ``torch.func`` transform."""
from __future__ import annotations

import torch


def untransformed() -> bool:
    """True when nothing is being compiled and no function transform (``vmap``, ``grad``, ...)
    wraps the call: the tensors seen are the caller's own, so plain autograd and batched library
    calls give what the transforms would, for a fraction of their overhead per operation."""
    return (not torch.compiler.is_compiling()
            and torch._C._functorch.peek_interpreter_stack() is None)
