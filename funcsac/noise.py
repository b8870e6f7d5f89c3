"""Exploration noise held over several steps (FlashSAC's, leeyngdo/FlashSAC
``flash_rl/agents/flashSAC/agent.py`` ``_sample_flashsac_actions``): each draw of the policy's
standard normal noise is kept for a number of environment steps drawn from a truncated zeta
distribution, ``P(n) ~ n^-mu`` for ``n`` in ``1 .. max_hold`` (mu 2, max 16: 2.1 steps on
average), so that the actions ``tanh(mean + std * noise)`` explore in short coherent runs.
"""
from __future__ import annotations

import torch

from . import keys


def hold_lengths(key: torch.Tensor, shape, mu: float, max_hold: int) -> torch.Tensor:
    """Integers in ``[1, max_hold]`` (int64) of ``shape``, ``P(n) = n^-mu / sum_m m^-mu``."""
    n = torch.arange(1, max_hold + 1, dtype=torch.float64, device=key.device)
    cdf = torch.cumsum(n ** -mu, 0)
    cdf = cdf / cdf[-1]
    u = keys.uniform(key, shape, torch.float64)
    return 1 + (u.unsqueeze(-1) > cdf[:-1]).sum(-1)

def held_noise(noise: torch.Tensor, key: torch.Tensor, mu: float, max_hold: int) -> torch.Tensor:
    """``noise [T, n, ...]`` (a fresh draw per step ``t`` of ``n`` independent streams) held:
    each stream's steps fall in runs of ``hold_lengths`` drawn with ``key``, the first run
    starting at ``t = 0``, and every step of run ``i`` takes the stream's draw ``i``. Returns
    ``[T, n, ...]``; each step's noise stays standard normal."""
    T, n = noise.shape[:2]
    ends = torch.cumsum(hold_lengths(key, (T, n), mu, max_hold), 0)  # [T, n]: each run's end
    starts = torch.zeros(T + 1, n, dtype=ends.dtype, device=ends.device)
    starts = starts.scatter_add(0, ends.clamp(max=T), torch.ones_like(ends))[:T]
    run = torch.cumsum(starts, 0)  # [T, n]: the run each step falls in
    index = run.reshape((T, n) + (1,) * (noise.dim() - 2)).expand_as(noise)
    return noise.gather(0, index)
