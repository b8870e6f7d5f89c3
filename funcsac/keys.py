"""Counter-based random numbers from an explicit key, in plain tensor ops.

A key is an int64 tensor of shape ``[2]`` holding two 32-bit words. Every draw is a hash of the key,
the draw's kind (split, fold_in, uniform, normal, randint, choice), its size and the element's
index, so the same key gives the same numbers eagerly, compiled, on any device and under ``vmap``
(a stack of keys ``[S, 2]`` draws ``S`` independent streams), while draws of different kinds or
sizes from one key are independent of each other. Integer arithmetic stays below 2**63, so nothing
relies on overflow.
"""
from __future__ import annotations

import math

import torch

_MASK32 = 0xFFFFFFFF


# Multipliers of a two-round xorshift-multiply hash (hash-prospector); both are below 2**31, so
# ``x * c`` of a 32-bit ``x`` stays below 2**63 and one int64 multiply and a mask compute it.
_M1, _M2 = 0x21F0AAAD, 0x735A2D97

# One tag per kind of draw (arbitrary distinct 32-bit constants), and an odd multiplier below
# 2**31 that folds a draw's size into the key
_SPLIT, _FOLD_IN, _UNIFORM, _NORMAL, _RANDINT, _CHOICE = (
    0x9E3779B9, 0x7F4A7C15, 0xF39CC060, 0x5CEDC834, 0x2F0E1B5D, 0xB5297A4D)
_SIZE = 0x61C88647


def _mix32(x):
    """A 32-bit avalanche hash of each element of ``x`` (int64 holding values in ``[0, 2**32)``),
    or of a Python int in that range."""
    x = x ^ (x >> 16)
    x = (x * _M1) & _MASK32
    x = x ^ (x >> 15)
    x = (x * _M2) & _MASK32
    return x ^ (x >> 15)


def _tag(kind: int, data: int = 0) -> tuple:
    """Two 32-bit words (Python ints) hashing a kind of draw and an integer (a folded-in value)."""
    w0 = _mix32(_mix32((data & _MASK32) ^ kind) ^ ((data >> 32) & _MASK32))
    return w0, _mix32(w0 ^ kind)


def _bits(key: torch.Tensor, n: int, kind: int, data: int = 0) -> torch.Tensor:
    """``[n]`` pseudo-random 32-bit integers (int64) from ``key [2]`` for one kind of draw: element
    ``i`` is ``mix(mix(i ^ key[0] ^ t0) ^ key[1] ^ s)`` with ``(t0, t1) = _tag(kind, data)`` and
    ``s = (t1 + n * _SIZE) % 2**32``.

    ``s`` is a Python int, a constant under ``torch.compile``; a symbolic size (dynamic shapes)
    makes it a host-side scalar, and a linear expression keeps inductor's simplifier fast.
    """
    t0, t1 = _tag(kind, data)
    i = torch.arange(n, device=key.device, dtype=torch.int64)
    return _mix32(_mix32(i ^ (key[0] ^ t0)) ^ (key[1] ^ ((t1 + n * _SIZE) % 2 ** 32)))


def _unit(bits: torch.Tensor, dtype) -> torch.Tensor:
    """32-bit integers mapped to the open interval (0, 1) with 23 bits of resolution (so that
    float32 never rounds them to 0 or 1)."""
    return ((bits >> 9).to(dtype) + 0.5) * (1.0 / 8388608.0)


def make_key(seed: int, device="cpu") -> torch.Tensor:
    """A key ``[2]`` (int64) from an integer seed."""
    seed = int(seed)
    words = torch.tensor([seed & _MASK32, (seed >> 32) & _MASK32], dtype=torch.int64, device=device)
    return _mix32(_mix32(words) ^ torch.tensor([0x243F6A88, 0x85A308D3], device=device))


def fold_in(key: torch.Tensor, data: int) -> torch.Tensor:
    """A new key ``[2]`` from ``key`` and an integer (e.g. a purpose or an index)."""
    return _bits(key, 2, _FOLD_IN, int(data))


def split(key: torch.Tensor, num: int = 2) -> torch.Tensor:
    """``num`` new independent keys ``[num, 2]`` from ``key [2]``."""
    return _bits(key, 2 * num, _SPLIT).reshape(num, 2)


def uniform(key: torch.Tensor, shape, dtype=torch.float32) -> torch.Tensor:
    """Uniform numbers in the open interval (0, 1) of the given shape, 23 bits of resolution."""
    return _unit(_bits(key, math.prod(shape), _UNIFORM), dtype).reshape(shape)


def normal(key: torch.Tensor, shape, dtype=torch.float32) -> torch.Tensor:
    """Standard normal numbers of the given shape (Box-Muller)."""
    n = math.prod(shape)
    half = (n + 1) // 2
    u = _unit(_bits(key, 2 * half, _NORMAL), dtype).reshape(2, half)
    r = torch.sqrt(-2.0 * torch.log(u[0]))
    theta = (2.0 * math.pi) * u[1]
    z = torch.cat([r * torch.cos(theta), r * torch.sin(theta)])
    return z[:n].reshape(shape)


def randint(key: torch.Tensor, shape, high) -> torch.Tensor:
    """Integers in ``[0, high)`` (int64) of the given shape; ``high`` (int or 0-d tensor) <
    2**32."""
    return (_bits(key, math.prod(shape), _RANDINT) % high).reshape(shape)


def choice(key: torch.Tensor, n: int, k: int) -> torch.Tensor:
    """``k`` distinct indices drawn uniformly from ``range(n)`` ([k], int64)."""
    return torch.topk(_unit(_bits(key, n, _CHOICE), torch.float32), k).indices
