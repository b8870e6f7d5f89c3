"""The dtype of a network's matrix products (``SACConfig.precision``).

A template marked with ``set_products_dtype`` (``precision="bf16"``) takes its matrix products
and convolutions, forward and backward, with operands in that dtype (the hardware accumulates in
float32) and casts each result back, so the parameters, the activations between the products and
the outputs keep the parameters' dtype. A template that is not a plain ``Sequential`` runs under
``torch.autocast`` instead (its other layers then see bfloat16 activations too) and its output is
cast back (``funcsac.networks.apply_network``).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

# SACConfig.precision -> the dtype of the networks' matrix products (None: the parameters')
PRECISIONS = {"fp32": None, "bf16": torch.bfloat16}

# a template's attribute: the dtype of its matrix products (absent: its parameters' dtype)
_PRODUCTS = "funcsac_products_dtype"


def set_products_dtype(template: nn.Module, dtype: Optional[torch.dtype]) -> nn.Module:
    """Mark ``template`` (before its first use) to take its matrix products and convolutions in
    ``dtype`` (``None``: its parameters' dtype). Returns ``template``."""
    setattr(template, _PRODUCTS, dtype)
    return template


def products_dtype(template: nn.Module) -> Optional[torch.dtype]:
    """The dtype ``set_products_dtype`` gave ``template`` (``None``: its parameters')."""
    return getattr(template, _PRODUCTS, None)


def product(products: Optional[torch.dtype], op, x: torch.Tensor, weight: torch.Tensor,
            bias: Optional[torch.Tensor], *args) -> torch.Tensor:
    """``op(x, weight, bias, *args)`` (a linear layer's or a convolution's) with its operands in
    ``products`` (``None``: as they are), the result in ``x``'s dtype."""
    if products is None:
        return op(x, weight, bias, *args)
    return op(x.to(products), weight.to(products), None if bias is None else bias.to(products),
              *args).to(x.dtype)
