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
    ``SACConfig.image_shape``; with a state vector, dicts of ``"pixels"`` and
    ``"state" [B, state_dim]``), ``action [B, act_dim]`` in [-1, 1] (a categorical
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


def map_obs(fn, obs):
    """``fn(obs)``, or for a dict observation the dict of ``fn`` of each entry."""
    return {k: fn(v) for k, v in obs.items()} if isinstance(obs, dict) else fn(obs)


def _fail(field: str, expected: str, got: str) -> None:
    raise ValueError(f"Batch.{field}: expected {expected}, got {got}")


def _shape(dims) -> str:
    """``[8, 5]``, or ``[?, ?]`` under torch.compile, where sizes may be symbolic (and cannot be
    formatted)."""
    compiling = torch.compiler.is_compiling()
    return "[" + ", ".join("?" if compiling else str(d) for d in dims) + "]"


def check_obs_keys(obs, config: SACConfig, label: str) -> None:
    """``ValueError`` (starting with ``label``) unless ``obs`` is a dict of the config's keys
    when its observations are dicts (``SACConfig.obs_parts``)."""
    parts = config.obs_parts
    if parts and (not isinstance(obs, dict) or set(obs) != set(parts)):
        got = f"keys {sorted(obs)}" if isinstance(obs, dict) else type(obs).__name__
        raise ValueError(f"{label}: expected a dict of {sorted(parts)} (images with a state "
                         f"vector), got {got}")


def field_parts(x, field: str, config: SACConfig, shape: tuple, dtypes: tuple,
                owner: str = "Batch.") -> list:
    """``[(label, tensor, trailing shape, dtypes)]`` of a field: itself, or each entry of a dict
    observation (``SACConfig.obs_parts``), whose keys must be the config's (an error names the
    field after ``owner``)."""
    parts = config.obs_parts if field in ("obs", "next_obs") else {}
    if not parts:
        return [(field, x, shape, dtypes)]
    check_obs_keys(x, config, owner + field)
    return [(f"{field}[{k!r}]", x[k], dims, (dtype,)) for k, (dims, dtype) in parts.items()]


def _batch_size(obs):
    """The leading size of an observation (of a dict's ``"pixels"``), or ``None``."""
    obs = obs.get("pixels") if isinstance(obs, dict) else obs
    return obs.shape[0] if isinstance(obs, torch.Tensor) and obs.dim() else None


def check_batch_structure(batch, config: SACConfig) -> None:
    """Shape, dtype and device checks (no data is read, so it is free under ``torch.compile``;
    messages are only formatted on failure, as the batch size may be symbolic there)."""
    if not isinstance(batch, Batch):
        raise ValueError(f"expected a funcsac.Batch, got {type(batch).__name__}")
    b = _batch_size(batch.obs)
    action = (POLICIES[config.policy].action_size(config.act_dim),)
    obs_dims = config.obs_shape
    trailing = {"obs": obs_dims, "action": action, "reward": (), "next_obs": obs_dims,
                "terminated": (), "horizon": (), "weight": ()}
    device = torch.device(config.device)
    for field, dims in trailing.items():
        allowed = ((config.dtype, torch.bool) if field == "terminated" else
                   (config.obs_dtype,) if field in ("obs", "next_obs") else (config.dtype,))
        for part in field_parts(getattr(batch, field), field, config, dims, allowed):
            _check_tensor(*part, b, device)


def _check_tensor(label: str, x, dims: tuple, allowed: tuple, b, device: torch.device) -> None:
    want = lambda: "[" + ", ".join([_shape([b])[1:-1] if b is not None else "B"]  # noqa: E731
                                   + [str(d) for d in dims]) + "]"
    if not isinstance(x, torch.Tensor):
        _fail(label, f"a tensor of shape {want()}", type(x).__name__)
    if b is None or x.dim() != 1 + len(dims) or x.shape[0] != b or tuple(x.shape[1:]) != dims:
        _fail(label, f"shape {want()}", _shape(x.shape))
    if x.dtype not in allowed:
        _fail(label, "dtype " + " or ".join(map(str, allowed)), str(x.dtype))
    if x.device.type != device.type or (device.index is not None and x.device != device):
        _fail(label, f"device {device}", str(x.device))


def check_batch(batch, config: SACConfig) -> None:
    """``check_batch_structure`` plus finiteness and ``action`` within [-1, 1]; reads the data
    (a host sync), so drivers call it outside the compiled update."""
    check_batch_structure(batch, config)
    for field in Batch._fields:
        for label, x, _, _ in field_parts(getattr(batch, field), field, config, (), ()):
            if x.is_floating_point() and not bool(torch.isfinite(x).all()):
                _fail(label, "finite values", "NaN or inf")
    family = POLICIES[config.policy]
    if not bool(family.valid_actions(batch.action, config.act_dim)):
        _fail("action", family.action_space, "values outside it")
    if bool((batch.horizon < 1).any()):
        _fail("horizon", "step counts >= 1", "values below 1")
    if bool((batch.weight < 0).any()):
        _fail("weight", "weights >= 0", "negative values")
