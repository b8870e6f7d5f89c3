"""FlashSAC's networks (Kim et al. 2026; leeyngdo/FlashSAC ``flash_rl/agents/flashSAC/layer.py``
and ``network.py``), registered as ``SACConfig.network="flashsac"``.

A plain ``Sequential`` (so batch statistics run in training mode, as CrossQ's): the input
batch-normalised (``in_bn``) and embedded by a bias-free linear layer to the width ``w``
(``embed``), one inverted residual block per entry of ``hidden_sizes``, ``x + ReLU(BN(W2
ReLU(BN(W1 x))))`` (``W1``: ``w -> 4 w``), an RMSNorm (``post_norm``) and a head: the actor's
a linear layer with a bias (``policy_head``, the mean's rows then the log-std's; its start and
its norm are the ``policy_head`` option's, ``FlashSACOptions``), the critics' a bias-free unit
linear layer plus a bias (``value_head``). Batch normalisation is plain
(``funcsac.batch_renorm.BatchNorm``, momentum 0.01, eps 1e-5).

After each optimiser step the network's ``post_step`` (``normalize_parameters``) keeps, as
FlashSAC's ``normalize_parameters``: every weight row of the bias-free layers (and of the
actor's head with ``policy_head="unit"``) of unit norm, each batch normalisation's scale and
shift jointly of norm ``sqrt(features)``, and the RMSNorm's scale of norm ``sqrt(features)``.
"""
from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from ...architectures import equal_widths
from ...batch_renorm import BatchNorm
from ...layers import Residual
from ...networks import Params
from ...registry import Network, register, setting

EPS = 1e-8  # added to a squared norm before it divides, as FlashSAC
EXPANSION = 4  # a block's inner width over its width
MEAN_INIT_STD = 1e-3  # the std of the actor's mean head's initial weights
# the names' ends that say what a tensor is: a unit layer's weight; a batch normalisation's scale
# (its shift ends in "_bn.bias"); the RMSNorm's scale
UNIT_WEIGHTS = ("embed.weight", "up.weight", "down.weight", "value_head.weight")
BN_SCALE, RMS_SCALE = "_bn.weight", "post_norm.weight"


def unit_linear(in_dim: int, out_dim: int, bias: bool = False) -> nn.Linear:
    """A linear layer whose weight rows start orthogonal (gain 1) and of unit norm (zero bias)."""
    layer = nn.Linear(in_dim, out_dim, bias=bias)
    with torch.no_grad():
        nn.init.orthogonal_(layer.weight)
        layer.weight.copy_(F.normalize(layer.weight, dim=-1, eps=EPS))
        if bias:
            nn.init.zeros_(layer.bias)
    return layer


def block(width: int) -> Residual:
    """``x + ReLU(BN(W2 ReLU(BN(W1 x))))``, ``W1``: ``width -> 4 width``."""
    inner = EXPANSION * width
    return Residual(OrderedDict(up=unit_linear(width, inner), up_bn=BatchNorm(inner),
                                up_relu=nn.ReLU(), down=unit_linear(inner, width),
                                down_bn=BatchNorm(width), down_relu=nn.ReLU()))


POLICY_HEADS = ("unit", "small")


@dataclasses.dataclass(frozen=True)
class FlashSACOptions:
    """The ``"flashsac"`` network's options (``SACConfig.network_options``)."""

    policy_head: str = setting(
        "small", "the actor's head: small (FlashSAC's code since 2026-06-26: the mean's rows "
        "N(0, 1e-3), the log-std's zero, left as stepped) or unit (the code that ran its "
        "published results: the mean's and the log-std's weights each orthogonal with unit-norm "
        "rows, kept unit-norm after each step)")

    def check(self, config) -> None:
        """``ValueError`` naming a head FlashSAC's code never had."""
        if self.policy_head not in POLICY_HEADS:
            raise ValueError(f"SACConfig.policy_head must be one of {POLICY_HEADS}, got "
                             f"{self.policy_head!r}")


def policy_head(width: int, out_dim: int, kind: str = "small") -> nn.Linear:
    """The actor's head ``[B, w] -> [B, 2 A]``, every bias zero: with ``kind="unit"`` the
    mean's rows and the log-std's each orthogonal (gain 1) and of unit norm (FlashSAC's two
    ``UnitLinear`` layers); with ``"small"`` the mean's rows N(0, 1e-3), the log-std's zero."""
    layer = nn.Linear(width, out_dim)
    with torch.no_grad():
        nn.init.zeros_(layer.bias)
        if kind == "unit":  # two unit layers, the mean's rows then the log-std's
            layer.weight.copy_(torch.cat([unit_linear(width, len(rows)).weight
                                          for rows in layer.weight.chunk(2)]))
        else:
            nn.init.zeros_(layer.weight)
            nn.init.normal_(layer.weight[: out_dim // 2], 0.0, MEAN_INIT_STD)
    return layer


def flashsac(in_dim: int, out_dim: int, hidden_sizes, part: str,
             head: str = "small") -> nn.Sequential:
    """FlashSAC's actor (``part="actor"``, its head ``policy_head(kind=head)``) or critic,
    ``[B, in_dim] -> [B, out_dim]``, one block per entry of ``hidden_sizes`` (all of one
    width)."""
    w = hidden_sizes[0]
    head = (policy_head(w, out_dim, head) if part == "actor"
            else unit_linear(w, out_dim, bias=True))
    return nn.Sequential(OrderedDict(
        [("in_bn", BatchNorm(in_dim)), ("embed", unit_linear(in_dim, w))]
        + [(f"block{i}", block(w)) for i in range(len(hidden_sizes))]
        + [("post_norm", nn.RMSNorm(w, eps=1e-6)),
           ("policy_head" if part == "actor" else "value_head", head)]))


def _to_sqrt_dim(*scales: torch.Tensor) -> tuple:
    """``scales`` multiplied by one factor per row (last axis) that makes their joint norm
    ``sqrt(features)``."""
    squares = sum(s.square().sum(-1, keepdim=True) for s in scales)
    factor = math.sqrt(scales[0].shape[-1]) * torch.rsqrt(squares + EPS)
    return tuple(s * factor for s in scales)


def normalize_parameters(params: Params, options=None) -> Params:
    """``params`` (one network's, or an ensemble's stacked ``[N, ...]``) as FlashSAC keeps them
    after a step: unit layers' weight rows (the actor's head's too with ``policy_head="unit"``)
    l2-normalised, each batch normalisation's scale and shift (``*_bn.weight``, ``*_bn.bias``)
    and the RMSNorm's scale rescaled to the norm ``sqrt(features)``; everything else (biases,
    buffers, a ``"small"`` head) as it is."""
    units = UNIT_WEIGHTS + (("policy_head.weight",) if (options or FlashSACOptions()).policy_head
                            == "unit" else ())
    out = dict(params)
    for name, value in params.items():
        if name.endswith(units):
            out[name] = F.normalize(value, dim=-1, eps=EPS)
        elif name.endswith(RMS_SCALE):
            out[name], = _to_sqrt_dim(value)
        elif name.endswith(BN_SCALE):
            shift = name[: -len("weight")] + "bias"
            out[name], out[shift] = _to_sqrt_dim(value, params[shift])
    return out


FLASHSAC = register(Network(
    "flashsac", lambda in_dim, out_dim, sizes, options, part: flashsac(
        in_dim, out_dim, sizes, part, (options or FlashSACOptions()).policy_head),
    FlashSACOptions, check=equal_widths, post_step=normalize_parameters,
    help="FlashSAC's batch-normalised inverted residual blocks, unit-norm weights (Kim et al. "
         "2026)"))
