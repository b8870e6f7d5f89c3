"""DrQ (Kostrikov et al. 2020): SAC from pixels through the image encoder (``funcsac.encoders``)
with random shifts; a preset."""
from . import presets

__all__ = ['presets']
