"""DroQ (Hiraoka et al. 2022): SAC with 2 dropout and LayerNorm critics, UTD 20; a preset of SAC's
pieces."""
from . import presets

__all__ = ['presets']
