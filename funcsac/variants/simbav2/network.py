"""SimbaV2's hyperspherical networks (Lee et al. 2025, "Hyperspherical Normalization for Scalable
Deep Reinforcement Learning"; dojeon-ai/SimbaV2 scale_rl/agents/simbaV2/simbaV2_layer.py and
simbaV2_network.py), registered as ``SACConfig.network="simbav2"``.

Every activation between layers lies on the unit sphere and every weight row too: the input,
with a constant ``c_shift`` appended, is l2-normalised, embedded by a bias-free linear layer,
scaled by a learnable vector and normalised again; each block is an inverted bottleneck
(``w -> 4 w -> w``, ReLU) whose normalised output ``h`` moves the residual ``x`` by
``x + alpha (h - x)`` (a learnable per-unit ``alpha``: a LERP), normalised again; the head is
a bias-free layer, a learnable scale, and a linear layer with a bias. The actor's head is split
in ``actor_heads`` such heads, each giving its share of the output (SimbaV2's actor: one for
the mean, one for the log-std). The weights of the bias-free layers are projected back onto the
unit sphere after each optimiser step (``project_weights``, the network's ``post_step``).

A learnable scale ``s`` of initial value ``init`` is kept as ``scale`` times a parameter
(``Scaler``), so Adam moves it at ``lr * init / scale``, as there. ``init = scale`` for the
embedding's and the blocks' scales, per ``SimbaV2Options.scalers``: ``"results"`` (the code that
ran SimbaV2's published result files, hyper_simba before 2025-02-17: 1 for the embedding, ``1 /
sqrt(w)`` for the blocks) or ``"release"`` (scale_rl/agents/simbaV2 since: ``sqrt(2 / w)`` and
``sqrt(2 / w) / 2``). The forward is the same for both (each such scale starts uniform and is
followed by a normalisation or a ReLU), only Adam's relative steps on them differ. ``alpha``
starts at ``1 / (blocks + 1)`` with scale ``1 / sqrt(w)``; the heads' at 1.
"""
from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

from ...architectures import equal_widths
from ...accel.product_order import linear_of
from ...networks import Params
from ...registry import POLICIES, Network, is_int, is_real, register, setting

EPS = 1e-8  # the smallest norm a vector is divided by
EXPANSION = 4  # a block's inner width over its width
# the embedding's and the blocks' scales' init (= scale) at width w, per SimbaV2Options.scalers
SCALERS = {"results": (lambda w: 1.0, lambda w: 1 / math.sqrt(w)),
           "release": (lambda w: math.sqrt(2 / w), lambda w: math.sqrt(2 / w / EXPANSION))}
WEIGHTS = "hyper_dense.weight"  # the end of the names of the weights kept on the sphere


def l2normalize(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``x / max(||x||, 1e-8)`` along ``dim``."""
    return F.normalize(x, dim=dim, eps=EPS)


class Scaler(nn.Module):
    """``x * s`` with a learnable ``s [dim]`` of initial value ``init``: the parameter ``scaler``
    (starting at ``scale``) times ``init / scale``."""

    def __init__(self, dim: int, init: float, scale: float):
        super().__init__()
        self.scaler = nn.Parameter(torch.full((dim,), float(scale)))
        self.forward_scale = init / scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * (self.scaler * self.forward_scale)


class HyperDense(nn.Module):
    """A bias-free linear layer whose weight rows (one per output) start orthogonal and of unit
    norm, and are kept so by ``project_weights``."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.hyper_dense = nn.Linear(in_dim, out_dim, bias=False)
        with torch.no_grad():
            nn.init.orthogonal_(self.hyper_dense.weight)
            self.hyper_dense.weight.copy_(l2normalize(self.hyper_dense.weight))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear_of(self.hyper_dense)(x, self.hyper_dense.weight)


class Embedder(nn.Module):
    """``[B, in_dim] -> [B, w]``: ``normalize(s * W normalize([x, c_shift]))``."""

    def __init__(self, in_dim: int, width: int, c_shift: float, scale: float):
        super().__init__()
        self.c_shift = c_shift
        self.dense = HyperDense(in_dim + 1, width)
        self.scaler = Scaler(width, scale, scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = l2normalize(torch.cat([x, torch.full_like(x[..., :1], self.c_shift)], -1))
        return l2normalize(self.scaler(self.dense(x)))


class LERPBlock(nn.Module):
    """``[B, w] -> [B, w]``: ``h = normalize(W2 (ReLU(s * W1 x) + 1e-8))`` (``W1``: ``w -> 4 w``),
    then ``normalize(x + alpha * (h - x))``; ``s`` starts at ``scale``."""

    def __init__(self, width: int, blocks: int, scale: float):
        super().__init__()
        inner = EXPANSION * width
        self.w1 = HyperDense(width, inner)
        self.scaler = Scaler(inner, scale, scale)
        self.w2 = HyperDense(inner, width)
        self.alpha = Scaler(width, 1 / (blocks + 1), 1 / math.sqrt(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = l2normalize(self.w2(F.relu(self.scaler(self.w1(x))) + EPS))
        return l2normalize(x + self.alpha(h - x))


class Head(nn.Module):
    """``[B, w] -> [B, out_dim]``: ``W2 (s * W1 x) + b`` (``W1``: ``w -> w``; no activation)."""

    def __init__(self, width: int, out_dim: int):
        super().__init__()
        self.w1 = HyperDense(width, width)
        self.scaler = Scaler(width, 1.0, 1.0)
        self.w2 = HyperDense(width, out_dim)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.scaler(self.w1(x))) + self.bias


class SimbaV2Net(nn.Module):
    """``[B, in_dim] -> [B, out_dim]``: the embedding to width ``w``, ``blocks`` LERP blocks,
    and ``heads`` heads, each of ``out_dim / heads`` outputs, concatenated; the embedding's and
    the blocks' scales start as ``SCALERS[scalers]`` gives them."""

    def __init__(self, in_dim: int, out_dim: int, width: int, blocks: int, heads: int,
                 c_shift: float, scalers: str = "results"):
        super().__init__()
        embed, block = (f(width) for f in SCALERS[scalers])
        self.embedder = Embedder(in_dim, width, c_shift, embed)
        self.blocks = nn.Sequential(*(LERPBlock(width, blocks, block) for _ in range(blocks)))
        self.heads = nn.ModuleList(Head(width, out_dim // heads) for _ in range(heads))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.blocks(self.embedder(x))
        return torch.cat([head(z) for head in self.heads], -1)


def project_weights(params: Params, options=None) -> Params:
    """``params`` with each bias-free layer's weight rows (its last axis, so a stacked ensemble
    ``[N, out, in]`` too) l2-normalised: SimbaV2's ``l2normalize_network`` after each step."""
    return {k: l2normalize(v) if k.endswith(WEIGHTS) else v for k, v in params.items()}


@dataclasses.dataclass(frozen=True)
class SimbaV2Options:
    """The ``"simbav2"`` network's options (``SACConfig.network_options``)."""

    c_shift: float = setting(3.0, "the constant appended to the input before its normalisation "
                             "(SimbaV2's c_shift)")
    actor_heads: int = setting(
        2, "heads the actor's output is split among (SimbaV2: 2, the mean's and the log-std's)")
    scalers: str = setting(
        "results", "the embedding's and the blocks' learnable scales' start (their Adam step "
        "relative to it; the forward is the same): results (the code that ran SimbaV2's "
        "published results: 1 and 1/sqrt(w)) or release (its code since 2025-02-17: sqrt(2/w) "
        "and sqrt(2/w)/2)")

    def check(self, config) -> None:
        """``ValueError`` naming an option of the wrong kind, or ``actor_heads`` that do not
        divide the actor's output."""
        if not (is_real(self.c_shift) and self.c_shift > 0):
            raise ValueError(f"SACConfig.c_shift must be a finite number > 0, got "
                             f"{self.c_shift!r}")
        if self.scalers not in SCALERS:
            raise ValueError(f"SACConfig.scalers must be one of {tuple(SCALERS)}, got "
                             f"{self.scalers!r}")
        if not (is_int(self.actor_heads) and self.actor_heads >= 1):
            raise ValueError(f"SACConfig.actor_heads must be an integer >= 1, got "
                             f"{self.actor_heads!r}")
        family = POLICIES.get(config.policy)
        out = family.head_size(config.act_dim) if family else self.actor_heads
        if out % self.actor_heads:
            raise ValueError(f"SACConfig.actor_heads={self.actor_heads} must divide the actor's "
                             f"{out} outputs ({config.policy} policy, act_dim {config.act_dim})")


def _build(in_dim: int, out_dim: int, hidden_sizes, options, part: str) -> SimbaV2Net:
    options = options or SimbaV2Options()
    heads = options.actor_heads if part == "actor" else 1
    return SimbaV2Net(in_dim, out_dim, hidden_sizes[0], len(hidden_sizes), heads,
                      options.c_shift, options.scalers)


SIMBAV2 = register(Network(
    "simbav2", _build, SimbaV2Options, check=equal_widths, post_step=project_weights,
    help="SimbaV2's hyperspherical blocks, weights kept on the unit sphere (Lee et al. 2025)"))
