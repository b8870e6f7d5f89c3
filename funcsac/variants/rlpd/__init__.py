"""RLPD (Ball et al. 2023): SAC with offline data, 10 LayerNorm critics, UTD 20; a preset of SAC's
pieces."""
from . import presets

__all__ = ['presets']
