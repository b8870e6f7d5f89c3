"""BroNet, BRO's network: residual blocks of two LayerNorm'd layers, as
naumix/BiggerRegularizedOptimistic's ``jaxrl/networks``."""
from __future__ import annotations

import math

from torch import nn

from ...architectures import equal_widths, orthogonal, residual
from ...layers import Residual
from ...registry import Network, register


def bronet(in_dim: int, out_dim: int, hidden_sizes) -> nn.Sequential:
    """BroNet (Nauman et al. 2024): Linear, LayerNorm and ReLU to the width
    ``w = hidden_sizes[0]``, one residual block ``x + LN(Linear(ReLU(LN(Linear(x)))))`` per entry
    of ``hidden_sizes``, and a linear head. Initialised as naumix/BiggerRegularizedOptimistic's
    ``jaxrl/networks/common.py``: every weight orthogonal of gain sqrt(2) (``default_init``), every
    bias zero (there the actor's log-std head alone has gain 1; here it shares the head's)."""
    w, gain = hidden_sizes[0], math.sqrt(2.0)
    blocks = [Residual(orthogonal(nn.Linear(w, w), gain), nn.LayerNorm(w), nn.ReLU(),
                       orthogonal(nn.Linear(w, w), gain), nn.LayerNorm(w)) for _ in hidden_sizes]
    return nn.Sequential(orthogonal(nn.Linear(in_dim, w), gain), nn.LayerNorm(w), nn.ReLU(),
                         *blocks, orthogonal(nn.Linear(w, out_dim), gain))


BRONET = register(Network("bronet", residual(bronet), help="BRO's residual blocks (Nauman et al. "
                          "2024)", check=equal_widths))
