"""Observations from environments (numpy arrays, or dicts of them) as an agent's tensors."""
from __future__ import annotations

from typing import Optional

import torch

from ...config import SACConfig


def obs_tensors(obs, config: SACConfig, lead: Optional[tuple] = None):
    """``obs`` (an array, or a dict observation's arrays, ``SACConfig.obs_parts``) as tensors in
    the config's observation dtypes on its device; with ``lead``, each entry reshaped to
    ``[*lead, *shape]``."""
    device = torch.device(config.device)

    def tensor(x, shape, dtype):
        t = torch.as_tensor(x, dtype=dtype, device=device)
        return t if lead is None else t.reshape(*lead, *shape)
    if not config.obs_parts:
        return tensor(obs, config.obs_shape, config.obs_dtype)
    return {k: tensor(obs[k], shape, dtype) for k, (shape, dtype) in config.obs_parts.items()}
