"""n-step transitions from one-step ones, per sub-environment (as TorchRL's MultiStep and
SB3's n-step buffer compute them)."""
from __future__ import annotations

import numpy as np


class NStepQueue:
    """The last ``n - 1`` transitions of each of ``num_envs`` sub-environments, waiting to
    become the first step of an n-step transition.

    A transition from ``obs_t`` is emitted once ``n`` steps have followed it (``horizon`` n) or,
    sooner, when its episode ends: a termination or truncation within the n steps cuts the
    transition there (``horizon`` < n), terminated if the episode terminated. Its ``n``
    rewards ``r_t .. r_{t+horizon-1}`` are kept apart (zeros after the horizon) and summed with
    the agent's gamma when sampled. Transitions never cross an episode boundary, nor a reset
    step (the caller pushes only valid rows).
    """

    def __init__(self, num_envs: int, n: int, obs_dim: int, act_dim: int):
        self.n = n
        self.obs = np.zeros((num_envs, n, obs_dim))
        self.action = np.zeros((num_envs, n, act_dim))
        self.reward = np.zeros((num_envs, n))
        self.length = np.zeros(num_envs, np.int64)

    def push(self, valid, obs, action, reward, next_obs, terminated, truncated) -> dict:
        """Add one vector step's transitions (arrays with a leading ``[num_envs]`` axis; rows
        where ``valid`` is false are skipped). Returns the emitted n-step rows as arrays with a
        leading axis ``m``: ``obs, action, reward [m, n], next_obs, terminated, horizon`` and
        ``env`` (the sub-environment of each), ordered by sub-environment, then by time."""
        out = {k: [] for k in ("obs", "action", "reward", "next_obs", "terminated", "horizon",
                               "env")}
        for e in np.flatnonzero(valid):
            length = int(self.length[e])
            self.obs[e, length], self.action[e, length] = obs[e], action[e]
            self.reward[e, length] = reward[e]
            length += 1
            ended = bool(terminated[e] or truncated[e])
            # an ended episode emits every waiting transition; a full queue its oldest
            starts = range(length) if ended else range(int(length == self.n))
            for s in starts:
                rewards = np.zeros(self.n)
                rewards[:length - s] = self.reward[e, s:length]
                for k, v in (("obs", self.obs[e, s].copy()), ("action", self.action[e, s].copy()),
                             ("reward", rewards), ("next_obs", next_obs[e]),
                             ("terminated", bool(terminated[e])), ("horizon", length - s),
                             ("env", e)):
                    out[k].append(v)
            if ended:
                length = 0
            elif length == self.n:  # the oldest left as an n-step row: shift the rest down
                for x in (self.obs, self.action, self.reward):
                    x[e, :-1] = x[e, 1:].copy()
                length -= 1
            self.length[e] = length
        shapes = {"obs": self.obs.shape[2:], "action": self.action.shape[2:],
                  "reward": (self.n,), "next_obs": self.obs.shape[2:]}
        return {k: np.asarray(v) if v else np.zeros((0, *shapes.get(k, ())))
                for k, v in out.items()}

    def state_dict(self) -> dict:
        """The waiting transitions, for a checkpoint."""
        return {"obs": self.obs.copy(), "action": self.action.copy(),
                "reward": self.reward.copy(), "length": self.length.copy()}

    def load_state_dict(self, saved: dict) -> None:
        for k in ("obs", "action", "reward", "length"):
            value = np.asarray(saved[k])
            if value.shape != getattr(self, k).shape:
                raise ValueError(f"n-step queue {k}: expected shape {getattr(self, k).shape}, "
                                 f"got {value.shape}")
            setattr(self, k, value.astype(getattr(self, k).dtype))
