"""SAC (Haarnoja et al. 2018): the default algorithm, its losses those of ``funcsac.losses``, and
its preset."""
from . import algorithm, presets

__all__ = ['algorithm', 'presets']
