"""Acting with the policy."""
from __future__ import annotations

from typing import Optional

import torch

from .networks import apply_actor
from .normalize import normalize_obs
from .policy import gaussian_pre_tanh
from .state import SACState


def act(state: SACState, obs: torch.Tensor, deterministic: bool = True,
        key: Optional[torch.Tensor] = None, noise: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Actions in [-1, 1] for ``obs [B, obs_dim]`` (or ``[obs_dim]``, normalised by the state's
    statistics when it keeps them): ``tanh(mean)`` when
    ``deterministic``, else a sample ``tanh(mean + std * noise)``, its standard normal ``noise``
    given (shaped ``[B, act_dim]`` like the actions) or drawn with ``key``."""
    cfg = state.config
    device = torch.device(cfg.device)
    if obs.shape[-1:] != (cfg.obs_dim,) or obs.dim() not in (1, 2):
        raise ValueError(f"obs: expected shape [B, {cfg.obs_dim}] or [{cfg.obs_dim}], "
                         f"got {list(obs.shape)}")
    if obs.dtype != cfg.dtype:
        raise ValueError(f"obs: expected dtype {cfg.dtype}, got {obs.dtype}")
    if obs.device.type != device.type:
        raise ValueError(f"obs: expected device {cfg.device}, got {obs.device}")
    if not deterministic and key is None and noise is None:
        raise ValueError("act: a stochastic action needs a key (funcsac.keys.split(...)) or noise")
    expected = obs.shape[:-1] + (cfg.act_dim,)
    if noise is not None and (noise.shape != expected or noise.dtype != cfg.dtype
                              or noise.device.type != device.type):
        raise ValueError(f"act: noise must be {cfg.dtype} of shape {list(expected)} on "
                         f"{cfg.device}, got {noise.dtype} {list(noise.shape)} on {noise.device}")
    if key is not None and key.device.type != device.type:
        raise ValueError(f"act: key on device {key.device}, expected the state's device "
                         f"{cfg.device} (funcsac.keys.make_key(seed, device))")
    single = obs.dim() == 1
    obs = obs.unsqueeze(0) if single else obs
    noise = noise.unsqueeze(0) if single and noise is not None else noise
    obs = normalize_obs(state.norm, obs)
    mean, log_std = apply_actor(state.static.actor, state.actor, obs, cfg.log_std_min,
                                cfg.log_std_max)
    action = torch.tanh(mean if deterministic else gaussian_pre_tanh(mean, log_std, key, noise))
    return action.squeeze(0) if single else action
