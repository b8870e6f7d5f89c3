"""The algorithms funcsac ships, each a module that registers itself (``funcsac.registry``):
SAC, TQC, CrossQ, BRO, SimBa's SAC, and discrete SAC with its categorical policy family."""
from . import bro, crossq, discrete, sac, simba, tqc

__all__ = ["bro", "crossq", "discrete", "sac", "simba", "tqc"]
