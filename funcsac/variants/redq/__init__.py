"""REDQ (Chen et al. 2021): SAC with 10 critics, the target's min over a random 2, UTD 20; a preset
of SAC's pieces."""
from . import presets

__all__ = ['presets']
