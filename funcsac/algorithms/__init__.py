"""The algorithms funcsac ships, each a module that registers itself (``funcsac.registry``):
SAC, TQC, CrossQ, BRO, SimBa's SAC, SAC with categorical critics, SimbaV2's SAC, FlashSAC's SAC,
and discrete SAC with its categorical policy family."""
from . import bro, categorical_q, crossq, discrete, flashsac, sac, simba, simbav2, tqc

__all__ = ["bro", "categorical_q", "crossq", "discrete", "flashsac", "sac", "simba", "simbav2",
           "tqc"]
