"""A minibatch of transitions and its validation."""
from __future__ import annotations

from typing import NamedTuple

import torch

from .config import SACConfig
from .registry import POLICIES


class _BatchFields(NamedTuple):
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    next_obs: torch.Tensor
    terminated: torch.Tensor
    horizon: torch.Tensor
    weight: torch.Tensor


class Batch(_BatchFields):
    """Transitions: ``obs [B, obs_dim]`` (image observations: ``uint8 [B, C, H, W]``,
    ``SACConfig.image_shape``), ``action [B, act_dim]`` in [-1, 1] (a categorical
    policy's: ``[B, 1]``, the action indices), ``reward [B]``,
    ``next_obs`` (as ``obs``), ``terminated [B]`` (bool or float, 1 where the episode truly ended;
    a time-limit truncation is not a termination).

    ``horizon [B]`` counts the environment steps from ``obs`` to ``next_obs`` (an n-step
    transition's ``reward`` is ``sum_k gamma^k r_k`` over them and its target bootstraps with
    ``gamma^horizon``); ``weight [B]`` weighs each row in the critic loss (prioritized replay's
    importance weights). Both default to ones: one-step transitions, uniformly weighted.
    """

    __slots__ = ()

    def __new__(cls, obs, action, reward, next_obs, terminated, horizon=None, weight=None):
        if isinstance(reward, torch.Tensor):  # otherwise check_batch names the bad reward
            horizon = torch.ones_like(reward) if horizon is None else horizon
            weight = torch.ones_like(reward) if weight is None else weight
        return super().__new__(cls, obs, action, reward, next_obs, terminated, horizon, weight)


def _fail(field: str, expected: str, got: str) -> None:
    raise ValueError(f"Batch.{field}: expected {expected}, got {got}")


def _shape(dims) -> str:
    """``[8, 5]``, or ``[?, ?]`` under torch.compile, where sizes may be symbolic (and cannot be
    formatted)."""
    compiling = torch.compiler.is_compiling()
    return "[" + ", ".join("?" if compiling else str(d) for d in dims) + "]"


def check_batch_structure(batch, config: SACConfig) -> None:
    """Shape, dtype and device checks (no data is read, so it is free under ``torch.compile``;
    messages are only formatted on failure, as the batch size may be symbolic there)."""
    if not isinstance(batch, Batch):
        raise ValueError(f"expected a funcsac.Batch, got {type(batch).__name__}")
    obs = batch.obs
    b = obs.shape[0] if isinstance(obs, torch.Tensor) and obs.dim() else None
    action = (POLICIES[config.policy].action_size(config.act_dim),)
    obs_dims = config.obs_shape
    trailing = {"obs": obs_dims, "action": action, "reward": (), "next_obs": obs_dims,
                "terminated": (), "horizon": (), "weight": ()}
    device = torch.device(config.device)
    for field, dims in trailing.items():
        x = getattr(batch, field)
        want = lambda: "[" + ", ".join([_shape([b])[1:-1] if b is not None else "B"]  # noqa: E731
                                       + [str(d) for d in dims]) + "]"
        if not isinstance(x, torch.Tensor):
            _fail(field, f"a tensor of shape {want()}", type(x).__name__)
        if b is None or x.dim() != 1 + len(dims) or x.shape[0] != b or tuple(x.shape[1:]) != dims:
            _fail(field, f"shape {want()}", _shape(x.shape))
        allowed = ((config.dtype, torch.bool) if field == "terminated" else
                   (config.obs_dtype,) if field in ("obs", "next_obs") else (config.dtype,))
        if x.dtype not in allowed:
            _fail(field, "dtype " + " or ".join(map(str, allowed)), str(x.dtype))
        if x.device.type != device.type or (device.index is not None and x.device != device):
            _fail(field, f"device {device}", str(x.device))


def check_batch(batch, config: SACConfig) -> None:
    """``check_batch_structure`` plus finiteness and ``action`` within [-1, 1]; reads the data
    (a host sync), so drivers call it outside the compiled update."""
    check_batch_structure(batch, config)
    for field in Batch._fields:
        x = getattr(batch, field)
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            _fail(field, "finite values", "NaN or inf")
    family = POLICIES[config.policy]
    if not bool(family.valid_actions(batch.action, config.act_dim)):
        _fail("action", family.action_space, "values outside it")
    if bool((batch.horizon < 1).any()):
        _fail("horizon", "step counts >= 1", "values below 1")
    if bool((batch.weight < 0).any()):
        _fail("weight", "weights >= 0", "negative values")
