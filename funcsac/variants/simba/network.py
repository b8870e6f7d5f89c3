"""SimBa's network: residual blocks over a LayerNorm, as SonyResearch/simba's
``scale_rl/networks``."""
from __future__ import annotations

from torch import nn

from ...architectures import equal_widths, he_normal, orthogonal, residual
from ...layers import Residual
from ...registry import Network, register


def simba(in_dim: int, out_dim: int, hidden_sizes, expansion: int = 4) -> nn.Sequential:
    """SimBa (Lee et al. 2024): a linear embedding to the width ``w = hidden_sizes[0]``, one
    residual block ``x + Linear(ReLU(Linear(LayerNorm(x))))`` per entry of ``hidden_sizes`` (an
    inverted bottleneck of inner width ``expansion * w``), a final LayerNorm and a linear head.
    Initialised as SonyResearch/simba's ``scale_rl/networks``: the embedding and the head
    orthogonal (gain 1), the blocks' layers He-normal, every bias zero."""
    w = hidden_sizes[0]
    blocks = [Residual(nn.LayerNorm(w), he_normal(nn.Linear(w, expansion * w)), nn.ReLU(),
                       he_normal(nn.Linear(expansion * w, w))) for _ in hidden_sizes]
    return nn.Sequential(orthogonal(nn.Linear(in_dim, w)), *blocks, nn.LayerNorm(w),
                         orthogonal(nn.Linear(w, out_dim)))


SIMBA = register(Network("simba", residual(simba), help="SimBa's residual blocks (Lee et al. 2024)",
                         check=equal_widths))
