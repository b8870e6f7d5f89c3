"""BRO (Nauman et al. 2024): quantile critics combined by mean and pessimism, an optimistic actor
that explores, BroNet and its preset."""
from . import algorithm, network, presets

__all__ = ['algorithm', 'network', 'presets']
