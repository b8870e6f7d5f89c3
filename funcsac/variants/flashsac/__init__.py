"""FlashSAC (Kim et al. 2026): SimbaV2's order over categorical critics with batch statistics over
the current and next rows, its unit-norm network and its preset."""
from . import algorithm, network, presets

__all__ = ['algorithm', 'network', 'presets']
