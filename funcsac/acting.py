"""Acting with the policy."""
from __future__ import annotations

from typing import Optional

import torch

from . import keys
from .batch import field_parts, map_obs
from .encoders import encoder_input
from .networks import apply_encoder
from .normalize import normalize_obs
from .policy import actor_obs
from .registry import POLICIES, algorithm_of
from .state import SACState


def act(state: SACState, obs: torch.Tensor, deterministic: bool = True,
        key: Optional[torch.Tensor] = None, noise: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Actions for ``obs [B, obs_dim]`` (or ``[obs_dim]``; with ``privileged_dim``, a batch's
    observations, which end in the privileged numbers, are taken too, without them), normalised
    by the state's statistics when it keeps them (image observations: ``uint8 [B, C, H, W]`` or
    ``[C, H, W]``, through the state's encoder; with a state vector, a dict of them,
    ``"pixels"``, and ``"state" [B, state_dim]`` or ``[state_dim]``), by the config's policy
    family: in [-1, 1], ``tanh(mean)`` when ``deterministic``, else a sample ``tanh(mean + std *
    noise)``; for a categorical policy the action index ``[B, 1]`` (float), the most likely one
    or a Gumbel-max sample. The standard normal ``noise [B, act_dim]`` is given or drawn with
    ``key``."""
    cfg = state.config
    device = torch.device(cfg.device)
    if isinstance(obs, torch.Tensor) and obs.shape[-1:] == cfg.obs_shape[-1:]:
        obs = actor_obs(cfg, obs)  # a batch's observations: what the actor sees of them
    lead = None  # the batch dimensions, which every entry shares
    for label, x, dims, (dtype,) in field_parts(obs, "obs", cfg, cfg.actor_obs_shape,
                                                (cfg.obs_dtype,), owner=""):
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"{label}: expected a tensor, got {type(x).__name__}")
        if (tuple(x.shape[-len(dims):]) != dims or x.dim() not in (len(dims), len(dims) + 1)
                or lead not in (None, x.shape[:x.dim() - len(dims)])):
            raise ValueError(f"{label}: expected shape [B, {', '.join(map(str, dims))}] or "
                             f"{list(dims)}, got {list(x.shape)}")
        lead = x.shape[:x.dim() - len(dims)]
        if x.dtype != dtype:
            raise ValueError(f"{label}: expected dtype {dtype}, got {x.dtype}")
        if x.device.type != device.type:
            raise ValueError(f"{label}: expected device {cfg.device}, got {x.device}")
    if not deterministic and key is None and noise is None:
        raise ValueError("act: a stochastic action needs a key (funcsac.keys.split(...)) or noise")
    expected = lead + (cfg.act_dim,)  # the noise's shape
    if noise is not None and (noise.shape != expected or noise.dtype != cfg.dtype
                              or noise.device.type != device.type):
        raise ValueError(f"act: noise must be {cfg.dtype} of shape {list(expected)} on "
                         f"{cfg.device}, got {noise.dtype} {list(noise.shape)} on {noise.device}")
    if key is not None and key.device.type != device.type:
        raise ValueError(f"act: key on device {key.device}, expected the state's device "
                         f"{cfg.device} (funcsac.keys.make_key(seed, device))")
    single = len(lead) == 0
    if single:
        obs = map_obs(lambda x: x.unsqueeze(0), obs)
    noise = noise.unsqueeze(0) if single and noise is not None else noise
    obs = normalize_obs(state.norm, obs)
    if cfg.image_shape:
        obs = apply_encoder(state.static.encoder, state.encoder, encoder_input(cfg, obs))
    if not deterministic and noise is None:
        noise = keys.normal(key, obs.shape[:-1] + (cfg.act_dim,), obs.dtype)
    explore = algorithm_of(cfg).explore
    if explore is not None and not deterministic:  # the algorithm's own exploration (BRO)
        action = explore(state, obs, noise)
    else:
        action = POLICIES[cfg.policy].act(state.static, state.actor, obs,
                                          None if deterministic else noise)
    return action.squeeze(0) if single else action
