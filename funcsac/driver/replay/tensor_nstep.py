"""n-step transitions from one-step ones on tensors, for environments stepped on tensors: what
``NStepQueue`` computes, every row of every step valid (same-step autoreset), on the device."""
from __future__ import annotations

import torch


class TensorNStepQueue:
    """``NStepQueue``'s waiting transitions of ``num_envs`` rows as tensors on ``device``: the
    same n-step rows, emitted in the same order (by row, then by time). Which rows a step emits
    is read back to the host (one ``nonzero`` a step)."""

    def __init__(self, num_envs: int, n: int, obs_dim: int, act_dim: int, device,
                 dtype=torch.float32):
        self.n = n
        zeros = lambda *shape: torch.zeros(*shape, dtype=dtype, device=device)  # noqa: E731
        self.obs, self.action = zeros(num_envs, n, obs_dim), zeros(num_envs, n, act_dim)
        self.reward = torch.zeros(num_envs, n, dtype=torch.float64, device=device)
        self.length = torch.zeros(num_envs, dtype=torch.int64, device=device)

    def push(self, obs, action, reward, next_obs, terminated, truncated) -> dict:
        """Add one step of every row (tensors with a leading ``[num_envs]`` axis). Returns the
        emitted n-step rows: ``obs, action, reward [m, n], next_obs, terminated, horizon`` and
        ``env`` (each one's row), ordered by row, then by time."""
        rows = torch.arange(len(self.length), device=self.length.device)
        self.obs[rows, self.length] = obs.to(self.obs.dtype)
        self.action[rows, self.length] = action.to(self.action.dtype)
        self.reward[rows, self.length] = reward.to(self.reward.dtype)
        length = self.length + 1
        ended = terminated | truncated
        full = (length == self.n) & ~ended
        start = torch.arange(self.n, device=rows.device)
        # an ended row emits every waiting transition; a full one its oldest
        emit = (ended[:, None] & (start < length[:, None])) | (full[:, None] & (start == 0))
        env, s = emit.nonzero(as_tuple=True)
        at = s[:, None] + start  # [m, n]: the steps each emitted row's rewards come from
        kept = at < length[env, None]
        rewards = torch.where(kept, self.reward[env[:, None], at.clamp(max=self.n - 1)], 0.0)
        out = {"obs": self.obs[env, s], "action": self.action[env, s], "reward": rewards,
               "next_obs": next_obs[env], "terminated": terminated[env],
               "horizon": length[env] - s, "env": env}
        shifted = full[:, None]  # the oldest left as an n-step row: shift the rest down
        self.obs = torch.where(shifted[..., None], self.obs.roll(-1, 1), self.obs)
        self.action = torch.where(shifted[..., None], self.action.roll(-1, 1), self.action)
        self.reward = torch.where(shifted, self.reward.roll(-1, 1), self.reward)
        self.length = torch.where(ended, 0, torch.where(full, length - 1, length))
        return out

    def state_dict(self) -> dict:
        """The waiting transitions, for a checkpoint (on the host)."""
        return {k: getattr(self, k).cpu() for k in ("obs", "action", "reward", "length")}

    def load_state_dict(self, saved: dict) -> None:
        for k in ("obs", "action", "reward", "length"):
            mine, value = getattr(self, k), torch.as_tensor(saved[k])
            if value.shape != mine.shape:
                raise ValueError(f"n-step queue {k}: expected shape {tuple(mine.shape)}, got "
                                 f"{tuple(value.shape)}")
            setattr(self, k, value.to(mine.device, mine.dtype))
