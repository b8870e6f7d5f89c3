"""Compiling ``update``: ``compile_update`` (``torch.compile`` made safe for a loop that feeds a
step's state to the next), the compile store (``compile_stored``: ahead-of-time artifacts,
signed, keyed by what they were compiled from) and the fingerprints its keys are made of."""
from .compiling import compile_update
from .stored import compile_stored

__all__ = ["compile_update", "compile_stored"]
