"""Discrete SAC (Christodoulou 2019): the categorical policy family and its algorithm."""
from . import algorithm

__all__ = ['algorithm']
