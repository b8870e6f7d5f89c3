"""Gymnasium's Pendulum-v1 for N pendulums at once, in torch on any device (a ``BatchedEnv``).

Each row steps as ``gymnasium.envs.classic_control.PendulumEnv`` under its 200-step time limit:
the torque clipped to [-2, 2], the cost ``angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2``,
``thdot`` integrated with ``dt`` 0.05 and clipped to [-8, 8], then ``th``; observations
``[cos th, sin th, thdot]``. In float64 a row's state and reward are gymnasium's to rounding
(the two libraries' ``sin``, ``cos`` and ``%`` may differ in the last bit). A new episode draws
``th`` in [-pi, pi] and ``thdot`` in [-1, 1] uniformly from the env's key (``funcsac.keys``), not
from numpy's generator: the same seed gives other first states than gymnasium's.
"""
from __future__ import annotations

import math

import torch

from ... import keys
from .batched import BatchedStep

MAX_SPEED, MAX_TORQUE, DT, G, M, L = 8.0, 2.0, 0.05, 10.0, 1.0, 1.0
EPISODE_STEPS = 200  # gymnasium's TimeLimit for Pendulum-v1


def angle_normalize(x: torch.Tensor) -> torch.Tensor:
    """``x`` wrapped into [-pi, pi), as gymnasium's ``angle_normalize``."""
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


def pendulum_step(th: torch.Tensor, thdot: torch.Tensor, u: torch.Tensor):
    """One step of gymnasium's Pendulum-v1 dynamics for rows ``th, thdot, u [N]``: ``(new th,
    new thdot, reward)``, all ``[N]``."""
    u = u.clamp(-MAX_TORQUE, MAX_TORQUE)
    costs = angle_normalize(th) ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2
    new_thdot = thdot + (3 * G / (2 * L) * torch.sin(th) + 3.0 / (M * L ** 2) * u) * DT
    new_thdot = new_thdot.clamp(-MAX_SPEED, MAX_SPEED)
    return th + new_thdot * DT, new_thdot, -costs


class TorchPendulum:
    """``num_envs`` Pendulum-v1 rows on ``device`` in ``dtype`` (float64 for exactness tests,
    float32 for training), autoreset in the same step after 200 steps. Rows never terminate and
    start together, so they end their episodes together: the step count ``t`` is one number on
    the host, and a step reads nothing back from the device."""

    obs_dim, act_dim, privileged_dim = 3, 1, 0

    def __init__(self, num_envs: int, device="cpu", dtype=torch.float32):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs, self.device, self.dtype = num_envs, torch.device(device), dtype
        self.action_low = torch.full((1,), -MAX_TORQUE, dtype=dtype, device=self.device)
        self.action_high = -self.action_low
        self.th = self.thdot = self.key = None
        self.t = 0  # steps into every row's episode
        # every row's end-of-episode flags, which a step returns as they are (never written)
        self.ongoing = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self.ended = torch.ones_like(self.ongoing)

    def _first_states(self, n: int):
        """``n`` first states ``(th, thdot)``, uniform in [-pi, pi] x [-1, 1]; the key moves on."""
        self.key, k = keys.split(self.key, 2)
        u = keys.uniform(k, (n, 2), self.dtype) * 2 - 1
        return u[:, 0] * math.pi, u[:, 1]

    def observe(self, th: torch.Tensor, thdot: torch.Tensor, t: int = 0) -> torch.Tensor:
        """The rows' observations ``[cos th, sin th, thdot]`` ``t`` steps into their episode."""
        return torch.stack([torch.cos(th), torch.sin(th), thdot], dim=-1)

    def reset(self, seed: int) -> torch.Tensor:
        self.key = keys.make_key(seed, self.device)
        self.th, self.thdot = self._first_states(self.num_envs)
        self.t = 0
        return self.observe(self.th, self.thdot)

    def set_state(self, th: torch.Tensor, thdot: torch.Tensor) -> torch.Tensor:
        """Put every row in the given state ``[N]`` after ``reset`` (as a test copies
        gymnasium's); returns the observations."""
        self.th, self.thdot = th.to(self.device, self.dtype), thdot.to(self.device, self.dtype)
        return self.observe(self.th, self.thdot, self.t)

    def state_dict(self) -> dict:
        """What a checkpoint keeps to continue exactly: the rows' states, the key, the step."""
        return {"th": self.th.cpu(), "thdot": self.thdot.cpu(), "key": self.key.cpu(),
                "t": self.t}

    def load_state_dict(self, saved: dict) -> None:
        """Continue from ``state_dict``'s values; ``ValueError`` if they are not this env's."""
        try:
            th, thdot = saved["th"], saved["thdot"]
            if th.shape != (self.num_envs,) or thdot.shape != (self.num_envs,):
                raise ValueError(f"{self.num_envs} rows expected, got {list(th.shape)}")
            self.th, self.thdot = th.to(self.device, self.dtype), thdot.to(self.device, self.dtype)
            self.key, self.t = saved["key"].to(self.device), int(saved["t"])
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"not a TorchPendulum's saved state: {e!r}") from e

    def close(self) -> None:
        """Nothing to release (the protocol's, for the driver)."""

    def step(self, action: torch.Tensor) -> BatchedStep:
        if self.th is None:
            raise RuntimeError("TorchPendulum.step before reset")
        if action.shape != (self.num_envs, 1):
            raise ValueError(f"actions must be [{self.num_envs}, 1], got {list(action.shape)}")
        th, thdot, reward = pendulum_step(self.th, self.thdot, action[:, 0].to(self.dtype))
        self.t += 1
        final = self.observe(th, thdot, self.t)
        ended = self.t >= EPISODE_STEPS
        self.th, self.thdot = self._first_states(self.num_envs) if ended else (th, thdot)
        self.t = 0 if ended else self.t
        return BatchedStep(self.observe(self.th, self.thdot) if ended else final, reward,
                           self.ongoing, self.ended if ended else self.ongoing, final)


class TimedPendulum(TorchPendulum):
    """``TorchPendulum`` whose critics also see how far each row is into its 200-step episode
    (``t / 200``, its one privileged number, after the three the actor sees): the time limit
    that truncates episodes, which the actor's observations do not hold."""

    privileged_dim = 1

    def observe(self, th: torch.Tensor, thdot: torch.Tensor, t: int = 0) -> torch.Tensor:
        seen = super().observe(th, thdot)
        return torch.cat([seen, torch.full_like(seen[:, :1], t / EPISODE_STEPS)], -1)
