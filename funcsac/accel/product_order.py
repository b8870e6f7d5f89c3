"""The order of a Linear layer's product: ``x @ W^T``, or weight first, ``(W @ x^T)^T``, for the
layers of a wide critic ensemble on a CPU. The same values up to rounding; weight first, each
weight's gradient comes in the weight's own layout under ``vmap`` (measured:
bench/studies/layout.py, bench/results/RESULTS.md)."""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

# a Linear layer's attribute: whether it takes its product weight first (absent: it does not)
_WEIGHT_FIRST = "funcsac_weight_first"
# the stacked weights of an ensemble's widest Linear layer from which all its layers take their
# products weight first (where it pays and where not: bench/studies/layout.py,
# bench/results/RESULTS.md)
WEIGHT_FIRST_MIN = 2 ** 19


def order_products(template: nn.Module, members: int, device) -> nn.Module:
    """Mark ``template``, the network of an ensemble of ``members`` evaluated under ``vmap``
    (before its first use), so that on a CPU, where one of its Linear layers' weights stacked
    over the members have at least ``WEIGHT_FIRST_MIN`` entries, all its Linear layers take
    their products weight first (``weight_first_linear``, through ``linear_of``; consecutive
    layers then pass their activations as ``[width, B]``). Each weight's gradient then comes in
    the weight's layout, so the optimiser's fused step streams every tensor in one order: a
    transposed gradient beside row-major moments makes that step slower than memory allows
    (measured in bench/studies/layout.py); narrower ensembles, whose gradients fit the cores'
    caches, gain nothing and are left as they are. Returns ``template``."""
    layers = [m for m in template.modules() if isinstance(m, nn.Linear)]
    wide = torch.device(device).type == "cpu" and any(
        members * layer.weight.numel() >= WEIGHT_FIRST_MIN for layer in layers)
    for layer in layers:
        setattr(layer, _WEIGHT_FIRST, wide)
    return template


def linear_of(layer: nn.Linear) -> Callable:
    """The function ``layer``'s product is taken with: ``weight_first_linear`` where
    ``order_products`` marked it so, else ``F.linear``."""
    return weight_first_linear if getattr(layer, _WEIGHT_FIRST, False) else F.linear


def weight_first_linear(x: torch.Tensor, weight: torch.Tensor,
                        bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` (``x [..., B, in]``, ``weight [out, in]``) computed as
    ``(weight @ x^T)^T + bias``: the same product, whose weight gradient comes out in the
    weight's own ``[out, in]`` layout under ``vmap`` too, where a batched ``x @ weight^T`` gives
    it transposed (its backward's product is ``x^T @ grad``, ``[in, out]``)."""
    if x.dim() < 2:
        return F.linear(x, weight, bias)
    y = (weight @ x.mT).mT
    return y if bias is None else y + bias
