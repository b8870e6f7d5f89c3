"""Devices: whether this torch can use one, and what it can use."""
from __future__ import annotations

import torch

from . import cpu


def check_device(device, name: str = "device") -> str:
    """The canonical name of ``device`` (a string such as ``"cuda:1"``, or a ``torch.device``);
    ``ValueError`` starting with ``name``, saying which devices are available, unless this torch
    can use it."""
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"{name} {device!r} is not a torch device (such as cpu, cuda, cuda:1 "
                         f"or mps); available: {_available_devices()}") from e
    why = _why_unavailable(parsed)
    if why:
        raise ValueError(f"{name} {device!r} is not available: {why}; available: "
                         f"{_available_devices()}")
    return str(parsed)


def _why_unavailable(device: torch.device) -> str:
    """Why this torch cannot use ``device`` (not built with its kind, no such device), or ""."""
    if device.type in ("cpu", "meta"):
        return ""
    kind = device.type.upper()
    built = torch.accelerator.current_accelerator(check_available=False)
    if built is None or built.type != device.type:
        return f"this torch has no {kind} (torch {torch.__version__})"
    count = torch.accelerator.device_count()
    if count == 0:
        return f"this torch supports {kind} but finds no {kind} device"
    if device.index is not None and device.index >= count:
        return f"there is no {kind} device {device.index} ({count} found)"
    return ""


def _available_devices() -> str:
    """The devices this torch can use: cpu, then each accelerator device (``cuda:0``, ...)."""
    built = torch.accelerator.current_accelerator(check_available=True)
    count = 0 if built is None else torch.accelerator.device_count()
    return ", ".join(["cpu"] + [f"{built.type}:{i}" for i in range(count)])


def bf16_products_slow(device) -> str:
    """Why ``device`` has no fast bfloat16 matrix products, or "" where it has them: a CPU with
    AMX or AVX512-BF16 (elsewhere torch converts to float32 and back, slower than float32), a
    CUDA device with native bfloat16 (compute capability 8.0 and later)."""
    device = torch.device(device)
    if device.type == "cpu":
        flags = cpu.cpu_description()["flags"].split()
        if "amx_bf16" in flags or "avx512_bf16" in flags:
            return ""
        return "this CPU has neither AMX nor AVX512-BF16"
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return ""
        return f"{torch.cuda.get_device_name(device)} has no native bfloat16"
    return f"bfloat16 products on {device.type} are not known to be fast"
