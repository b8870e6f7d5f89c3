"""SimbaV2 (Lee et al. 2025): SimBa's order over categorical critics, its hyperspherical network
and its presets."""
from . import algorithm, network, presets

__all__ = ['algorithm', 'network', 'presets']
