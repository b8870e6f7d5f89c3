"""The default architecture ``SACConfig.network`` names, ``"mlp"`` (``MLPOptions``), the weight
initialisations the networks share, and ``build_network``; the variants' own networks live in
their folders (``funcsac/variants``)."""
from __future__ import annotations

import dataclasses
import math

from torch import nn

from . import registry
from .batch_renorm import BatchRenorm
from .layers import KeyedDropout
from .registry import Network, is_real, register, setting


def mlp(in_dim: int, out_dim: int, hidden_sizes, activation=nn.ReLU, layer_norm: bool = False,
        dropout: float = 0.0, batch_renorm: bool = False) -> nn.Sequential:
    """A multilayer perceptron; each hidden layer is Linear, then optionally KeyedDropout and
    LayerNorm (DroQ's order), the activation, then optionally BatchRenorm; with ``batch_renorm``
    the input is batch-renormalised too (CrossQ's networks, as sbx's ``crossq`` builds them)."""
    layers, d = [BatchRenorm(in_dim)] if batch_renorm else [], in_dim
    for h in hidden_sizes:
        layers.append(nn.Linear(d, h))
        if dropout > 0.0:
            layers.append(KeyedDropout(dropout))
        if layer_norm:
            layers.append(nn.LayerNorm(h))
        layers.append(activation())
        if batch_renorm:
            layers.append(BatchRenorm(h))
        d = h
    layers.append(nn.Linear(d, out_dim))
    return nn.Sequential(*layers)


def orthogonal(layer: nn.Linear, gain: float = 1.0) -> nn.Linear:
    """``layer`` with an orthogonal weight of scale ``gain`` and a zero bias (flax's
    ``orthogonal(gain)`` and ``zeros``)."""
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def he_normal(layer: nn.Linear, scale: float = 2.0) -> nn.Linear:
    """``layer`` with a He-normal weight and a zero bias, as flax's ``he_normal`` draws it: a
    normal truncated at 2 standard deviations, scaled to the variance ``scale / fan_in`` (scale
    1: flax's ``lecun_normal``, its ``Dense`` default)."""
    std = math.sqrt(scale / layer.in_features) / _TRUNCATED_NORMAL_STD
    nn.init.trunc_normal_(layer.weight, 0.0, std, -2.0 * std, 2.0 * std)
    nn.init.zeros_(layer.bias)
    return layer


def xavier_uniform(layer: nn.Linear) -> nn.Linear:
    """``layer`` with a Xavier-uniform weight (gain 1) and a zero bias (REDQ's
    ``weights_init_``, flax's ``xavier_uniform``)."""
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


# how the "mlp" network's Linear layers start (MLPOptions.weight_init); "torch": as nn.Linear
WEIGHT_INITS = {"torch": lambda layer: layer,
                "lecun_normal": lambda layer: he_normal(layer, 1.0),
                "xavier_uniform": xavier_uniform,
                "orthogonal": orthogonal}


_TRUNCATED_NORMAL_STD = 0.87962566103423978  # of a standard normal truncated to [-2, 2]


@dataclasses.dataclass(frozen=True)
class MLPOptions:
    """The ``"mlp"`` network's options (``SACConfig.network_options``)."""

    critic_dropout: float = setting(
        0.0, "dropout rate in the critics, masks drawn from the agent's key (DroQ: 0.01)")
    critic_layer_norm: bool = setting(
        False, "LayerNorm after each hidden layer of the critics (DroQ)")
    critic_batch_renorm: bool = setting(
        False, "batch renormalisation of the critics' input and hidden layers (CrossQ)")
    actor_batch_renorm: bool = setting(
        False, "batch renormalisation of the actor's input and hidden layers, in training mode "
        "in the actor's step (CrossQ)")
    weight_init: str = setting(
        "torch", "how the Linear layers start: torch (nn.Linear's default; CleanRL, TQC), "
        "lecun_normal (flax's default; sbx), xavier_uniform (REDQ, DroQ, RLPD) or orthogonal "
        "(DrQ); every bias zero but with torch")

    def check(self, config) -> None:
        """``ValueError`` naming an option of the wrong kind."""
        d = self.critic_dropout
        if not (is_real(d) and 0.0 <= d < 1.0):
            raise ValueError(f"SACConfig.critic_dropout must be in [0, 1), got {d!r}")
        for name in ("critic_layer_norm", "critic_batch_renorm", "actor_batch_renorm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"SACConfig.{name} must be a bool, got {getattr(self, name)!r}")
        if self.weight_init not in WEIGHT_INITS:
            raise ValueError(f"SACConfig.weight_init must be one of {sorted(WEIGHT_INITS)}, got "
                             f"{self.weight_init!r}")


def _build_mlp(in_dim: int, out_dim: int, hidden_sizes, options: MLPOptions,
               part: str) -> nn.Sequential:
    if part == "actor":
        net = mlp(in_dim, out_dim, hidden_sizes, batch_renorm=options.actor_batch_renorm)
    else:
        net = mlp(in_dim, out_dim, hidden_sizes, layer_norm=options.critic_layer_norm,
                  dropout=options.critic_dropout, batch_renorm=options.critic_batch_renorm)
    for layer in net:
        if isinstance(layer, nn.Linear):
            WEIGHT_INITS[options.weight_init](layer)
    return net


def residual(build):
    """A residual network's ``Network.build`` from ``build(in_dim, out_dim, hidden_sizes)``: no
    options, the same module for both parts."""
    return lambda in_dim, out_dim, hidden_sizes, options, part: build(in_dim, out_dim,
                                                                      hidden_sizes)


def equal_widths(config) -> None:
    """``ValueError`` unless a residual network's sizes are one width repeated (one block per
    entry)."""
    for name in ("hidden_sizes", "actor_hidden_sizes"):
        sizes = getattr(config, name)
        if len(set(sizes)) > 1:
            raise ValueError(f"SACConfig.{name} must have equal entries with network="
                             f"{config.network!r} (one residual block of the same width per "
                             f"entry), got {sizes!r}")


NETWORKS = registry.NETWORKS  # the architectures ``SACConfig.network`` names
register(Network("mlp", _build_mlp, MLPOptions, help="ReLU MLPs, one hidden layer per entry of "
                 "hidden_sizes"))


def build_network(config, part: str, in_dim: int, out_dim: int) -> nn.Module:
    """The module ``config.network`` builds for ``part`` (``"actor"``, with
    ``actor_hidden_sizes`` or else ``hidden_sizes``, or ``"critic"``), ``[B, in_dim] ->
    [B, out_dim]``."""
    sizes = config.hidden_sizes if part == "critic" else (config.actor_hidden_sizes
                                                          or config.hidden_sizes)
    return registry.variant_of(config, "network").build(in_dim, out_dim, sizes,
                                                        config.network_options, part)
