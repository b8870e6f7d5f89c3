"""The algorithms funcsac ships, each a module that registers itself (``funcsac.registry``):
SAC, TQC, CrossQ, and discrete SAC with its categorical policy family."""
from . import crossq, discrete, sac, tqc

__all__ = ["crossq", "discrete", "sac", "tqc"]
