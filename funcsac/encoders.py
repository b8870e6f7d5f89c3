"""Image observations: a convolutional encoder in the pure style and DrQ's random-shift
augmentation drawn from a key.

Images arrive as ``uint8 [B, C, H, W]`` (frames stacked along the channels), alone or as the
``"pixels"`` of a dict observation beside a ``"state"`` vector, and become floats in
``[-0.5, 0.5]`` inside the update (DrQ-v2's scaling), so a replay buffer keeps them as bytes.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from . import keys, registry
from .registry import Encoder, is_int, is_real, register, setting


def drq_encoder(image_shape: tuple, feature_dim: int = 50, filters: int = 32) -> nn.Sequential:
    """DrQ's encoder (Kostrikov et al. 2020): ``[B, C, H, W] -> [B, feature_dim]``, four 3x3
    convolutions of ``filters`` channels (the first of stride 2) with ReLUs, then a linear
    projection, LayerNorm and tanh. At 84x84 the convolutions leave ``filters x 35 x 35``."""
    c, h, w = image_shape
    convs = [nn.Conv2d(c, filters, 3, stride=2), nn.ReLU()]
    for _ in range(3):
        convs += [nn.Conv2d(filters, filters, 3, stride=1), nn.ReLU()]
    flat = filters * (conv_size(h) * conv_size(w))
    return nn.Sequential(*convs, nn.Flatten(), nn.Linear(flat, feature_dim),
                         nn.LayerNorm(feature_dim), nn.Tanh())


def conv_size(n: int) -> int:
    """A side of ``n`` pixels after ``drq_encoder``'s convolutions (no padding)."""
    n = (n - 3) // 2 + 1
    return n - 6


def scale_images(images: torch.Tensor, dtype) -> torch.Tensor:
    """``uint8`` pixels ``[0, 255]`` as ``dtype`` in ``[-0.5, 0.5]``."""
    return images.to(dtype) * (1.0 / 255.0) - 0.5


def prepare_images(obs, dtype, key=None, pad: int = 0):
    """``uint8`` images ``[B, C, H, W]`` (or a dict observation, whose ``"pixels"`` they are) as
    an encoder takes them: scaled (``scale_images``), then, with a ``key``, shifted by up to
    ``pad`` pixels (``random_shift``)."""
    if isinstance(obs, dict):
        return {**obs, "pixels": prepare_images(obs["pixels"], dtype, key, pad)}
    x = scale_images(obs, dtype)
    return x if key is None else random_shift(x, key, pad)


def random_shift(images: torch.Tensor, key: torch.Tensor, pad: int = 4) -> torch.Tensor:
    """Each image of ``images [B, C, H, W]`` (floats) shifted by its own ``(dy, dx)``, drawn with
    ``key`` from ``[-pad, pad]^2``, its edge pixels repeated into the gap: DrQ's augmentation
    (pad by replication, then crop back to ``H x W`` at a random offset). ``pad = 0`` returns
    ``images``."""
    if pad == 0:
        return images
    b, c, h, w = images.shape
    padded = F.pad(images, (pad, pad, pad, pad), mode="replicate")
    offset = keys.randint(key, (b, 2), 2 * pad + 1)  # the crop's top-left corner
    rows = offset[:, :1] + torch.arange(h, device=images.device)  # [B, H]
    cols = offset[:, 1:] + torch.arange(w, device=images.device)  # [B, W]
    picked = torch.gather(padded, 2, rows[:, None, :, None].expand(b, c, h, w + 2 * pad))
    return torch.gather(picked, 3, cols[:, None, None, :].expand(b, c, h, w))


@dataclasses.dataclass(frozen=True)
class DrQOptions:
    """The ``"drq"`` encoder's options (``SACConfig.encoder_options``)."""

    image_pad: int = setting(
        4, "with pixels: each gradient step shifts the frames by up to this many pixels (DrQ; 0: "
        "none)")
    encoder_tau_scale: float = setting(
        1.0, "with pixels: the target encoder's polyak rate is tau times this (5: 0.05 beside "
        "the critics' 0.01)")
    views: int = setting(
        1, "with pixels: augmented views of each transition per critic step, the target "
        "averaged over them and the loss taken on each (DrQ's K = M: 2)")

    def check(self, config) -> None:
        """``ValueError`` naming an option out of range."""
        pad, scale, tau = self.image_pad, self.encoder_tau_scale, config.tau
        if not (is_int(pad) and pad >= 0):
            raise ValueError(f"SACConfig.image_pad must be an integer >= 0, got {pad!r}")
        if not (is_int(self.views) and self.views >= 1):
            raise ValueError(f"SACConfig.views must be an integer >= 1, got {self.views!r}")
        # a tau out of [0, 1] is left to its own check
        if not (is_real(scale) and scale > 0 and not (is_real(tau) and 0 <= tau <= 1
                                                       and scale * tau > 1)):
            raise ValueError(f"SACConfig.encoder_tau_scale must be a number > 0 whose product "
                             f"with tau ({tau}) is at most 1 (the target encoder's polyak rate), "
                             f"got {scale!r}")


def _check_drq(config) -> None:
    """``ValueError`` for images too small for DrQ's convolutions (unless a factory builds the
    encoder)."""
    shape = config.image_shape
    if shape and config.encoder_factory is None and min(shape[1:]) < 15:
        raise ValueError(f"SACConfig.image_shape must be at least 15 x 15 pixels for the drq "
                         f"encoder's convolutions, got {shape!r}")


register(Encoder(
    "drq", build=lambda image_shape, features, options: drq_encoder(image_shape, features),
    prepare=lambda obs, dtype, key, options: prepare_images(obs, dtype, key, options.image_pad),
    target_rate=lambda tau, options: tau * options.encoder_tau_scale, options=DrQOptions,
    check=_check_drq, view_count=lambda options: options.views,
    help="DrQ's convolutions, images shifted by up to image_pad pixels each gradient step"))


def encoder_input(config, obs, key=None, dtype=None):
    """Image observations ``obs`` as ``config.encoder``'s encoder takes them, in ``dtype``
    (default ``config.dtype``): augmented with ``key`` in a gradient step, as they are when
    acting (``key`` ``None``)."""
    encoder = registry.variant_of(config, "encoder")
    return encoder.prepare(obs, dtype or config.dtype, key, config.encoder_options)
