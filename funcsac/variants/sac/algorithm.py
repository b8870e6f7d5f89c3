"""SAC (Haarnoja et al. 2018) with the tanh-Gaussian policy: the losses of ``funcsac.losses``,
clipped double Q (or REDQ's random subset of an ensemble) and polyak-averaged target critics."""
from __future__ import annotations

from ...losses import Losses
from ...registry import Algorithm, register

SAC = register(Algorithm(
    "sac", Losses(), help="Soft Actor-Critic: min over (a subset of) the target critics"))
