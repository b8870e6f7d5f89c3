"""Observations from environments (numpy arrays, or dicts of them) as an agent's tensors."""
from __future__ import annotations

from typing import Optional

import torch

from ...config import SACConfig


def obs_tensors(obs, config: SACConfig, lead: Optional[tuple] = None):
    """``obs`` (an array, or a dict observation's arrays, ``SACConfig.obs_parts``) as tensors in
    the config's observation dtypes on its device; with ``lead``, each entry reshaped to
    ``[*lead, *shape]``. Vectors are cast; images must already be ``uint8`` (a float image
    cast to ``uint8`` would be truncated, not scaled): anything else is a ``ValueError``."""
    device = torch.device(config.device)

    def tensor(x, label, shape, dtype):
        if dtype == torch.uint8 and str(getattr(x, "dtype", None)) not in ("uint8", "torch.uint8"):
            raise ValueError(f"{label}: expected uint8 images (0..255, as the environment returns "
                             f"them), got {getattr(x, 'dtype', type(x).__name__)}")
        t = torch.as_tensor(x, dtype=dtype, device=device)
        return t if lead is None else t.reshape(*lead, *shape)
    if not config.obs_parts:
        return tensor(obs, "obs", config.obs_shape, config.obs_dtype)
    return {k: tensor(obs[k], f"obs[{k!r}]", shape, dtype)
            for k, (shape, dtype) in config.obs_parts.items()}
