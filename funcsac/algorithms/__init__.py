"""The algorithms funcsac ships, each a module that registers itself (``funcsac.registry``):
SAC, TQC, CrossQ, BRO, and discrete SAC with its categorical policy family."""
from . import bro, crossq, discrete, sac, tqc

__all__ = ["bro", "crossq", "discrete", "sac", "tqc"]
