"""CrossQ (Bhatt et al. 2024): no target networks, batch-renormalised critics over the current and
next pairs in one pass, and its preset."""
from . import algorithm, presets

__all__ = ['algorithm', 'presets']
