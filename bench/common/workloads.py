"""The benchmark workloads: sizes and random batches."""
import torch

import funcsac

# name: (obs_dim, act_dim, hidden, num_critics, num_target_critics)
WORKLOADS = {
    "mujoco": (17, 6, (256, 256), 2, 2),
    "small": (3, 1, (64, 64), 2, 2),
    "redq": (17, 6, (256, 256), 10, 2),
}
BATCH_SIZE = 256


def workload_config(name: str, **overrides) -> funcsac.SACConfig:
    obs, act, hidden, n, m = WORKLOADS[name]
    return funcsac.SACConfig.of(obs_dim=obs, act_dim=act, hidden_sizes=hidden, num_critics=n,
                             num_target_critics=m, **overrides)


def stepper(fn, state, batch):
    """A no-argument function advancing ``state`` by ``fn(state, batch)`` on each call; returns the
    metrics."""
    box = [state]

    def step():
        box[0], metrics = fn(box[0], batch)
        return metrics

    return step


def random_batch(cfg: funcsac.SACConfig, batch_size: int = BATCH_SIZE, seed: int = 0):
    """A batch of standard normal observations and rewards and uniform actions on ``cfg.device``."""
    g = torch.Generator().manual_seed(seed)
    batch = funcsac.Batch(
        obs=torch.randn(batch_size, cfg.obs_dim, generator=g),
        action=torch.rand(batch_size, cfg.act_dim, generator=g) * 2 - 1,
        reward=torch.randn(batch_size, generator=g),
        next_obs=torch.randn(batch_size, cfg.obs_dim, generator=g),
        terminated=torch.zeros(batch_size))
    return funcsac.Batch(*(x.to(cfg.device) for x in batch))


def batch_fields(batch: funcsac.Batch) -> tuple:
    """The one-step fields the reference implementations take: ``(obs, action, reward, next_obs,
    terminated)``."""
    return batch.obs, batch.action, batch.reward, batch.next_obs, batch.terminated
