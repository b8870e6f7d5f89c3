"""Acting with the policy."""
from __future__ import annotations

from typing import Optional

import torch

from . import keys
from .encoders import prepare_images
from .networks import apply_encoder
from .normalize import normalize_obs
from .registry import POLICIES
from .state import SACState


def act(state: SACState, obs: torch.Tensor, deterministic: bool = True,
        key: Optional[torch.Tensor] = None, noise: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Actions for ``obs [B, obs_dim]`` (or ``[obs_dim]``, normalised by the state's statistics
    when it keeps them; image observations: ``uint8 [B, C, H, W]`` or ``[C, H, W]``, through the
    state's encoder), by the config's policy family: in [-1, 1], ``tanh(mean)`` when
    ``deterministic``, else a sample ``tanh(mean + std * noise)``; for a categorical policy the
    action index ``[B, 1]`` (float), the most likely one or a Gumbel-max sample. The standard
    normal ``noise [B, act_dim]`` is given or drawn with ``key``."""
    cfg = state.config
    device = torch.device(cfg.device)
    dims = cfg.obs_shape
    if tuple(obs.shape[-len(dims):]) != dims or obs.dim() not in (len(dims), len(dims) + 1):
        raise ValueError(f"obs: expected shape [B, {', '.join(map(str, dims))}] or "
                         f"{list(dims)}, got {list(obs.shape)}")
    if obs.dtype != cfg.obs_dtype:
        raise ValueError(f"obs: expected dtype {cfg.obs_dtype}, got {obs.dtype}")
    if obs.device.type != device.type:
        raise ValueError(f"obs: expected device {cfg.device}, got {obs.device}")
    if not deterministic and key is None and noise is None:
        raise ValueError("act: a stochastic action needs a key (funcsac.keys.split(...)) or noise")
    expected = obs.shape[:obs.dim() - len(dims)] + (cfg.act_dim,)  # the noise's shape
    if noise is not None and (noise.shape != expected or noise.dtype != cfg.dtype
                              or noise.device.type != device.type):
        raise ValueError(f"act: noise must be {cfg.dtype} of shape {list(expected)} on "
                         f"{cfg.device}, got {noise.dtype} {list(noise.shape)} on {noise.device}")
    if key is not None and key.device.type != device.type:
        raise ValueError(f"act: key on device {key.device}, expected the state's device "
                         f"{cfg.device} (funcsac.keys.make_key(seed, device))")
    single = obs.dim() == len(dims)
    obs = obs.unsqueeze(0) if single else obs
    noise = noise.unsqueeze(0) if single and noise is not None else noise
    obs = normalize_obs(state.norm, obs)
    if cfg.image_shape:
        obs = apply_encoder(state.static.encoder, state.encoder,
                            prepare_images(obs, cfg.dtype))
    if not deterministic and noise is None:
        noise = keys.normal(key, obs.shape[:-1] + (cfg.act_dim,), obs.dtype)
    action = POLICIES[cfg.policy].act(state.static, state.actor, obs,
                                      None if deterministic else noise)
    return action.squeeze(0) if single else action
