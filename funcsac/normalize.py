"""Running observation and return statistics as leaves of the state, and the normalisation they
give (as SB3's VecNormalize computes it, but pure and vmappable; with a bound on the scaled
returns as SimbaV2's reward normaliser)."""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional

import torch

EPS = 1e-8
OBS_CLIP = 10.0  # normalised observations are clipped to [-10, 10]


class RunningStats(NamedTuple):
    """Count, mean and variance of the values seen so far (float64): ``count`` 0-d, ``mean`` and
    ``var`` of the values' shape."""

    count: torch.Tensor
    mean: torch.Tensor
    var: torch.Tensor


def init_stats(shape: tuple, device) -> RunningStats:
    """No values seen yet: mean 0, variance 1 (normalisation is then the identity)."""
    zeros = torch.zeros(shape, dtype=torch.float64, device=device)
    return RunningStats(torch.zeros((), dtype=torch.float64, device=device), zeros, zeros + 1.0)


def merge_stats(stats: RunningStats, x: torch.Tensor, mask: torch.Tensor) -> RunningStats:
    """``stats`` updated with the rows of ``x [n, *shape]`` where ``mask [n]`` is true (Chan et
    al.'s parallel merge of two sets' counts, means and variances); unchanged when none is."""
    x = x.to(torch.float64)
    w = mask.to(torch.float64)
    n = w.sum()
    w = w.reshape(-1, *([1] * (x.dim() - 1)))
    batch_mean = (w * x).sum(0) / n.clamp(min=1.0)
    batch_var = (w * (x - batch_mean).square()).sum(0) / n.clamp(min=1.0)
    total = stats.count + n
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * (n / total.clamp(min=1.0))
    var = (stats.var * stats.count + batch_var * n
           + delta.square() * stats.count * n / total.clamp(min=1.0)) / total.clamp(min=1.0)
    some = n > 0
    return RunningStats(total, torch.where(some, mean, stats.mean),
                        torch.where(some, var, stats.var))


def normalize_obs(norm: Dict[str, RunningStats], obs: torch.Tensor) -> torch.Tensor:
    """``(obs - mean) / sqrt(var + eps)`` clipped to ``OBS_CLIP``, in ``obs``'s dtype, when the
    state keeps observation statistics (``norm["obs"]``); ``obs`` otherwise. Observations
    narrower than the statistics (the actor's, without the privileged numbers that end them)
    take the leading entries."""
    if "obs" not in norm:
        return obs
    s, width = norm["obs"], obs.shape[-1]
    z = (obs - s.mean[..., :width].to(obs.dtype)) * torch.rsqrt(s.var[..., :width].to(obs.dtype)
                                                                + EPS)
    return z.clamp(-OBS_CLIP, OBS_CLIP)


def scale_reward(norm: Dict[str, RunningStats], reward: torch.Tensor,
                 bound: Optional[float] = None) -> torch.Tensor:
    """``reward / sqrt(var(return) + eps)`` when the state keeps statistics of the discounted
    return (``norm["return"]``), and with a ``bound`` (``SACConfig.return_bound``) ``reward /
    max(sqrt(var(return) + eps), max |return| / bound)`` (SimbaV2's reward normaliser, the
    largest |return| seen in ``norm["return_max"]``); ``reward`` otherwise."""
    if "return" not in norm:
        return reward
    divisor = torch.sqrt(norm["return"].var + EPS)
    if bound is not None:
        divisor = torch.maximum(divisor, norm["return_max"] / bound)
    return reward / divisor.to(reward.dtype)


def observe(state, obs: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor):
    """``state`` with its statistics updated by the rows of ``obs [n, obs_dim]`` and of the
    running discounted returns ``returns [n]`` where ``mask [n]`` holds (the driver calls it
    with each vector step's data). A state without statistics is returned as it is."""
    norm = dict(state.norm)
    if "obs" in norm:
        norm["obs"] = merge_stats(norm["obs"], obs, mask)
    if "return" in norm:
        norm["return"] = merge_stats(norm["return"], returns, mask)
    if "return_max" in norm:  # the largest |return| seen
        seen = torch.where(mask, returns.to(torch.float64).abs(), 0.0).max()
        norm["return_max"] = torch.maximum(norm["return_max"], seen)
    return state.replace(norm=norm)
