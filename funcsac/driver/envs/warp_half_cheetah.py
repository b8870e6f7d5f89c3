"""Gymnasium's HalfCheetah-v5 for N rows at once on MuJoCo Warp (a ``BatchedEnv``), on the CPU or
a CUDA GPU: the physics of N worlds steps in Warp kernels, whose arrays torch reads and writes in
place (``warp.to_torch``), so observations, rewards and actions stay tensors on the device.

Each row is gymnasium's ``HalfCheetahEnv`` with its defaults: the same model file, 5 physics
steps of 0.01 s an action, the reward ``x velocity - 0.1 * sum(action^2)``, observations
``[qpos[1:], qvel]`` (17), no termination, truncated after 1,000 steps. MuJoCo Warp computes in
float32 (MuJoCo in float64): a row stays within about 1e-2 of gymnasium's over its first ten
steps from the same state, and the two part further as contacts amplify the rounding. A new
episode draws ``qpos0 + U(-0.1, 0.1)`` and ``0.1 * N(0, 1)`` velocities from the env's key
(``funcsac.keys``), not numpy's generator. Needs the ``warp`` extra (``mujoco-warp``).
"""
from __future__ import annotations

from pathlib import Path

import torch

from ... import keys
from .batched import BatchedStep

FRAME_SKIP, EPISODE_STEPS = 5, 1000  # gymnasium's HalfCheetah-v5 and its TimeLimit
FORWARD_WEIGHT, CONTROL_COST, RESET_NOISE = 1.0, 0.1, 0.1


def _warp():
    """``(mujoco, warp, mujoco_warp)``, or an ImportError that says which extra brings them."""
    try:
        import mujoco
        import mujoco_warp
        import warp
    except ImportError as e:
        raise ImportError("warp/HalfCheetah-v5 needs MuJoCo Warp: pip install "
                          "'funcsac[warp]'") from e
    warp.config.quiet = True
    return mujoco, warp, mujoco_warp


def model_path() -> Path:
    """Gymnasium's half_cheetah.xml, the model HalfCheetah-v5 loads."""
    import gymnasium.envs.mujoco as assets

    return Path(assets.__file__).parent / "assets" / "half_cheetah.xml"


class WarpHalfCheetah:
    """``num_envs`` HalfCheetah-v5 rows on ``device``, observations and rewards in ``dtype``,
    autoreset in the same step after 1,000 steps. Rows never terminate and start together, so
    the step count ``t`` is one number on the host, and a step reads nothing back from the
    device."""

    obs_dim, act_dim, privileged_dim = 17, 6, 0

    def __init__(self, num_envs: int, device="cpu", dtype=torch.float32):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        mujoco, self.wp, self.mjw = _warp()
        self.num_envs, self.device, self.dtype = num_envs, torch.device(device), dtype
        self.wp_device = ("cpu" if self.device.type == "cpu"
                          else f"cuda:{self.device.index or 0}")
        spec = mujoco.MjModel.from_xml_path(str(model_path()))
        self.dt = spec.opt.timestep * FRAME_SKIP
        with self.wp.ScopedDevice(self.wp_device):
            self.model = self.mjw.put_model(spec)
            self.data = self.mjw.make_data(spec, nworld=num_envs)
        view = self.wp.to_torch
        self.qpos, self.qvel, self.ctrl = view(self.data.qpos), view(self.data.qvel), \
            view(self.data.ctrl)
        self.warmstart, self.time = view(self.data.qacc_warmstart), view(self.data.time)
        self.qpos0 = torch.as_tensor(spec.qpos0, dtype=torch.float32, device=self.device)
        self.action_low, self.action_high = (
            torch.as_tensor(spec.actuator_ctrlrange[:, i], dtype=dtype, device=self.device)
            for i in (0, 1))
        self.key, self.t = None, 0
        self.ongoing = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self.ended = torch.ones_like(self.ongoing)

    def _observe(self) -> torch.Tensor:
        return torch.cat([self.qpos[:, 1:], self.qvel], -1).to(self.dtype)

    def _start_episodes(self) -> None:
        """Every row at the first state of a new episode; the key moves on."""
        self.key, k_pos, k_vel = keys.split(self.key, 3)
        n, nq, nv = self.num_envs, self.qpos.shape[1], self.qvel.shape[1]
        self.qpos.copy_(self.qpos0 + RESET_NOISE * (2 * keys.uniform(k_pos, (n, nq)) - 1))
        self.qvel.copy_(RESET_NOISE * keys.normal(k_vel, (n, nv)))
        self.warmstart.zero_()
        self.time.zero_()

    def reset(self, seed: int) -> torch.Tensor:
        self.key, self.t = keys.make_key(seed, self.device), 0
        self._start_episodes()
        return self._observe()

    def set_state(self, qpos: torch.Tensor, qvel: torch.Tensor) -> torch.Tensor:
        """Put every row in the given state (``[N, 9]`` each) after ``reset`` (as a test copies
        gymnasium's); returns the observations."""
        self.qpos.copy_(qpos)
        self.qvel.copy_(qvel)
        self.warmstart.zero_()
        return self._observe()

    def step(self, action: torch.Tensor) -> BatchedStep:
        if self.key is None:
            raise RuntimeError("WarpHalfCheetah.step before reset")
        if action.shape != (self.num_envs, self.act_dim):
            raise ValueError(f"actions must be [{self.num_envs}, {self.act_dim}], got "
                             f"{list(action.shape)}")
        x_before = self.qpos[:, 0].clone()
        self.ctrl.copy_(action)
        self._physics()
        velocity = (self.qpos[:, 0] - x_before) / self.dt
        reward = (FORWARD_WEIGHT * velocity
                  - CONTROL_COST * action.to(torch.float32).square().sum(-1)).to(self.dtype)
        final = self._observe()
        self.t += 1
        ended = self.t >= EPISODE_STEPS
        if ended:
            self._start_episodes()
            self.t = 0
        return BatchedStep(self._observe() if ended else final, reward, self.ongoing,
                           self.ended if ended else self.ongoing, final)

    def _physics(self) -> None:
        """``FRAME_SKIP`` MuJoCo Warp steps of every world, on torch's current CUDA stream where
        the rows live on a GPU (so torch's reads and writes are ordered with them)."""
        stream = (self.wp.ScopedStream(self.wp.stream_from_torch(torch.cuda.current_stream()))
                  if self.device.type == "cuda" else self.wp.ScopedDevice(self.wp_device))
        with stream:
            for _ in range(FRAME_SKIP):
                self.mjw.step(self.model, self.data)

    def state_dict(self) -> dict:
        """What a checkpoint keeps to continue: the rows' positions, velocities and solver warm
        starts, the key, the step."""
        return {"qpos": self.qpos.cpu().clone(), "qvel": self.qvel.cpu().clone(),
                "warmstart": self.warmstart.cpu().clone(), "key": self.key.cpu(), "t": self.t}

    def load_state_dict(self, saved: dict) -> None:
        """Continue from ``state_dict``'s values; ``ValueError`` if they are not this env's."""
        try:
            if saved["qpos"].shape != self.qpos.shape:
                raise ValueError(f"positions {list(self.qpos.shape)} expected, got "
                                 f"{list(saved['qpos'].shape)}")
            self.qpos.copy_(saved["qpos"])
            self.qvel.copy_(saved["qvel"])
            self.warmstart.copy_(saved["warmstart"])
            self.key, self.t = saved["key"].to(self.device), int(saved["t"])
        except (KeyError, TypeError, AttributeError, RuntimeError) as e:
            raise ValueError(f"not a WarpHalfCheetah's saved state: {e!r}") from e

    def close(self) -> None:
        """Nothing to release (Warp frees the arrays with the env)."""
