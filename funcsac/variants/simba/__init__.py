"""SimBa (Lee et al. 2024): its order of the steps (the actor's first), its residual network and
its preset."""
from . import algorithm, network, presets

__all__ = ['algorithm', 'network', 'presets']
