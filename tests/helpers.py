import torch

import funcsac


def make_batch(cfg: funcsac.SACConfig, batch_size: int = 32, seed: int = 0,
               terminated_fraction: float = 0.2) -> funcsac.Batch:
    """A random batch matching ``cfg``."""
    g = torch.Generator().manual_seed(seed)
    dt = cfg.dtype
    B = batch_size
    return funcsac.Batch(
        obs=torch.randn(B, cfg.obs_dim, generator=g, dtype=dt),
        action=torch.rand(B, cfg.act_dim, generator=g, dtype=dt) * 2 - 1,
        reward=torch.randn(B, generator=g, dtype=dt),
        next_obs=torch.randn(B, cfg.obs_dim, generator=g, dtype=dt),
        terminated=torch.rand(B, generator=g) < terminated_fraction,
    )


def small_config(**overrides) -> funcsac.SACConfig:
    kw = dict(obs_dim=5, act_dim=2, hidden_sizes=(16, 16))
    kw.update(overrides)
    return funcsac.SACConfig(**kw)
