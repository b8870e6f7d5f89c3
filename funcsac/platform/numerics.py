"""What floating-point results depend on beyond a computation's inputs: the torch build, the CPU's
instruction set, MKL's kernels (``funcsac.accel.blas``), the intra-op threads and the GPU. BLAS
(MKL), oneDNN and inductor choose kernels by instruction set, shape and thread count, and torch's
reductions split their work by thread, so the same inputs give bitwise the same results only where
all of these are equal."""
from __future__ import annotations

from typing import Dict, List

import torch

from ..accel import blas
from .cpu import cpu_description, flags_digest


def numerics(device) -> Dict[str, str]:
    """What decides the rounding of a computation on ``device``: torch version, CPU model, a
    digest of its flags, intra-op threads and (CUDA) the GPU's name."""
    cpu = cpu_description()
    device = torch.device(device)
    return {"torch": str(torch.__version__), "cpu": cpu["model"],
            "mkl": "answered" if blas.answered else "shipped",
            "cpu_flags": flags_digest(),
            "threads": str(torch.get_num_threads()),
            "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else ""}


def numerics_differences(saved: Dict[str, str], now: Dict[str, str]) -> List[str]:
    """``"name: saved -> now"`` for each entry of ``numerics`` that differs."""
    return [f"{k} {saved.get(k)!r} -> {v!r}" for k, v in now.items() if saved.get(k) != v]
