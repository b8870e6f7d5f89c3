"""Counter-based random numbers from an explicit key, in plain tensor ops.

A key is an int64 tensor of shape ``[2]`` holding two 32-bit words. Every draw is a hash of the key
and the element's index, so the same key gives the same numbers eagerly, compiled, on any device
and under ``vmap`` (a stack of keys ``[S, 2]`` draws ``S`` independent streams). Integer arithmetic
stays below 2**63, so nothing relies on overflow.
"""
from __future__ import annotations

import math

import torch

_MASK32 = 0xFFFFFFFF


# Multipliers of a two-round xorshift-multiply hash (hash-prospector); both are below 2**31, so
# ``x * c`` of a 32-bit ``x`` stays below 2**63 and one int64 multiply and a mask compute it.
_M1, _M2 = 0x21F0AAAD, 0x735A2D97


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit avalanche hash of each element of ``x`` (int64 holding values in ``[0, 2**32)``)."""
    x = x ^ (x >> 16)
    x = (x * _M1) & _MASK32
    x = x ^ (x >> 15)
    x = (x * _M2) & _MASK32
    return x ^ (x >> 15)


def _bits(key: torch.Tensor, n: int) -> torch.Tensor:
    """``[n]`` pseudo-random 32-bit integers (int64) from ``key [2]``: element ``i`` is
    ``mix(mix(i ^ key[0]) ^ key[1])``."""
    i = torch.arange(n, device=key.device, dtype=torch.int64)
    return _mix32(_mix32(i ^ key[0]) ^ key[1])


def make_key(seed: int, device="cpu") -> torch.Tensor:
    """A key ``[2]`` (int64) from an integer seed."""
    seed = int(seed)
    words = torch.tensor([seed & _MASK32, (seed >> 32) & _MASK32], dtype=torch.int64, device=device)
    return _mix32(_mix32(words) ^ torch.tensor([0x243F6A88, 0x85A308D3], device=device))


def fold_in(key: torch.Tensor, data: int) -> torch.Tensor:
    """A new key ``[2]`` from ``key`` and an integer (e.g. a purpose or an index)."""
    word = _mix32(torch.tensor(int(data) & _MASK32, dtype=torch.int64, device=key.device))
    return _bits(key ^ word, 2)


def split(key: torch.Tensor, num: int = 2) -> torch.Tensor:
    """``num`` new independent keys ``[num, 2]`` from ``key [2]``."""
    return _bits(key, 2 * num).reshape(num, 2)


def uniform(key: torch.Tensor, shape, dtype=torch.float32) -> torch.Tensor:
    """Uniform numbers in the open interval (0, 1) of the given shape, 23 bits of resolution (so
    that float32 never rounds them to 0 or 1)."""
    n = math.prod(shape)
    u = ((_bits(key, n) >> 9).to(dtype) + 0.5) * (1.0 / 8388608.0)
    return u.reshape(shape)


def normal(key: torch.Tensor, shape, dtype=torch.float32) -> torch.Tensor:
    """Standard normal numbers of the given shape (Box-Muller)."""
    n = math.prod(shape)
    half = (n + 1) // 2
    u = uniform(key, (2, half), dtype)
    r = torch.sqrt(-2.0 * torch.log(u[0]))
    theta = (2.0 * math.pi) * u[1]
    z = torch.cat([r * torch.cos(theta), r * torch.sin(theta)])
    return z[:n].reshape(shape)


def randint(key: torch.Tensor, shape, high) -> torch.Tensor:
    """Integers in ``[0, high)`` (int64) of the given shape; ``high`` (int or 0-d tensor) < 2**32."""
    return (_bits(key, math.prod(shape)) % high).reshape(shape)


def choice(key: torch.Tensor, n: int, k: int) -> torch.Tensor:
    """``k`` distinct indices drawn uniformly from ``range(n)`` ([k], int64)."""
    return torch.topk(uniform(key, (n,)), k).indices
