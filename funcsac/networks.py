"""Network templates and their pure apply functions.

Modules are templates kept on the ``meta`` device; their weights live in parameter dicts that are
passed to ``torch.func.functional_call``. The critic ensemble is N independently initialised
modules stacked along a leading axis and evaluated in one ``torch.func.vmap``.
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch
from torch import nn
from torch.func import functional_call, stack_module_state

Params = Dict[str, torch.Tensor]


def mlp(in_dim: int, out_dim: int, hidden_sizes, activation=nn.ReLU,
        layer_norm: bool = False) -> nn.Sequential:
    """A multilayer perceptron; optional LayerNorm after each hidden linear layer."""
    layers, d = [], in_dim
    for h in hidden_sizes:
        layers.append(nn.Linear(d, h))
        if layer_norm:
            layers.append(nn.LayerNorm(h))
        layers.append(activation())
        d = h
    layers.append(nn.Linear(d, out_dim))
    return nn.Sequential(*layers)


def default_actor(obs_dim: int, act_dim: int, hidden_sizes) -> nn.Module:
    """ReLU MLP ``obs [B, obs_dim] -> [B, 2 * act_dim]`` (mean, raw log-std)."""
    return mlp(obs_dim, 2 * act_dim, hidden_sizes)


def default_critic(obs_dim: int, act_dim: int, hidden_sizes) -> nn.Module:
    """ReLU MLP ``[B, obs_dim + act_dim] -> [B, 1]``."""
    return mlp(obs_dim + act_dim, 1, hidden_sizes)


def module_params(module: nn.Module) -> Params:
    """Detached parameters and buffers of ``module`` by name."""
    named = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    return {k: v.detach() for k, v in named.items()}


def stack_params(modules) -> Params:
    """Parameters and buffers of N same-shaped modules stacked along a new leading axis ``[N]``."""
    params, buffers = stack_module_state(list(modules))
    return {k: v.detach() for k, v in {**params, **buffers}.items()}


def cast_params(params: Params, device, dtype) -> Params:
    """``params`` moved to ``device``, floating tensors converted to ``dtype``."""
    return {k: v.to(device=device, dtype=dtype if v.is_floating_point() else v.dtype)
            for k, v in params.items()}


def apply_actor(template: nn.Module, params: Params, obs: torch.Tensor,
                log_std_min: float, log_std_max: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """Policy head: ``obs [B, obs_dim] -> (mean [B, act], log_std [B, act])``.

    The raw log-std is squashed smoothly into ``[log_std_min, log_std_max]`` with a tanh.
    """
    out = functional_call(template, params, (obs,))
    mean, raw = out.chunk(2, dim=-1)
    log_std = log_std_min + 0.5 * (log_std_max - log_std_min) * (torch.tanh(raw) + 1.0)
    return mean, log_std


def apply_critic(template: nn.Module, params: Params, obs: torch.Tensor,
                 action: torch.Tensor) -> torch.Tensor:
    """One critic: ``(obs [B, obs_dim], action [B, act]) -> Q [B]``."""
    return functional_call(template, params, (torch.cat([obs, action], dim=-1),)).squeeze(-1)


def apply_critics(template: nn.Module, params: Params, obs: torch.Tensor,
                  action: torch.Tensor) -> torch.Tensor:
    """The ensemble: stacked params ``[N, ...]`` -> ``Q [N, B]`` for one shared batch."""
    return torch.func.vmap(lambda p: apply_critic(template, p, obs, action))(params)
