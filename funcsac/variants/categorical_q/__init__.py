"""Categorical critics (C51's projection), as SimbaV2 and FlashSAC train theirs."""
from . import algorithm

__all__ = ['algorithm']
