"""TQC (Kuznetsov et al. 2020): truncated quantile critics, and its preset."""
from . import algorithm, presets

__all__ = ['algorithm', 'presets']
