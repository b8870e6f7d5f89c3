"""The loop's own state between vector steps, as a checkpoint keeps it."""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
import torch

from ...batch import map_obs
from ..tools.evaluate import EvalResult
from .checkpoint import CheckpointError


@dataclasses.dataclass
class Progress:
    """The loop's own state at a vector-step boundary; with the agents, the buffers and the envs
    it is everything a checkpoint needs to continue exactly."""

    env_step: int
    updates: int
    key: torch.Tensor  # [agents, 2], on the training device
    obs: np.ndarray  # [agents * num_envs, ...] (dict observations: a dict of such arrays)
    prev_done: np.ndarray
    episode_return: np.ndarray
    episode_length: np.ndarray
    finished_returns: list  # per agent, since the last metrics row
    evals: list
    timings: dict
    elapsed: float
    beta_horizon: int  # prioritized replay's beta reaches 1 here: the total_steps at the start
    noise_key: Optional[torch.Tensor] = None  # [agents, 2]: the current noise block's key
    nstep: Optional[dict] = None  # the n-step queue's waiting transitions (NStepQueue.state_dict)
    discounted_return: Optional[np.ndarray] = None  # per sub-env, for reward scaling

    # the per-row fields: numpy arrays, or tensors on the device for environments stepped on
    # tensors (``on_device``)
    ROWS = ("obs", "prev_done", "episode_return", "episode_length", "discounted_return")

    def on_device(self, device) -> "Progress":
        """This progress with its per-row fields as tensors on ``device``."""
        return dataclasses.replace(self, **{
            k: map_obs(lambda x: torch.as_tensor(x, device=device), getattr(self, k))
            for k in self.ROWS if getattr(self, k) is not None})

    def to_checkpoint(self) -> dict:
        host = lambda x: torch.from_numpy(x) if isinstance(x, np.ndarray) else x.cpu()  # noqa: E731
        fields = {k: host(v) if isinstance(v, (np.ndarray, torch.Tensor)) else v
                  for k, v in dataclasses.asdict(self).items()}
        if self.nstep is not None:
            fields["nstep"] = {k: host(v) for k, v in self.nstep.items()}
        fields["obs"] = map_obs(host, self.obs)
        fields["key"] = self.key.cpu()
        fields["noise_key"] = None if self.noise_key is None else self.noise_key.cpu()
        fields["evals"] = [dataclasses.asdict(e) for e in self.evals]
        return fields

    @classmethod
    def from_checkpoint(cls, fields: dict, device) -> "Progress":
        try:
            values = {k: v.numpy() if isinstance(v, torch.Tensor) else v
                      for k, v in fields.items()}
            values["obs"] = map_obs(lambda x: x.numpy(), fields["obs"])
            values["key"] = fields["key"].to(device)
            if fields.get("noise_key") is not None:
                values["noise_key"] = fields["noise_key"].to(device)
            values["evals"] = [EvalResult(**e) for e in values["evals"]]
            if fields.get("nstep") is not None:
                values["nstep"] = {k: v.numpy() for k, v in fields["nstep"].items()}
            return cls(**values)
        except (KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"checkpoint's loop progress is malformed ({e!r})") from e


def crossed(before: int, after: int, every: int) -> bool:
    """Whether going from env step ``before`` to ``after`` passed a multiple of ``every`` (never
    for ``every == 0``)."""
    return every > 0 and after // every > before // every
