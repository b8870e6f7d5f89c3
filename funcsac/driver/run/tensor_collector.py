"""The collect stage for environments that step on tensors (``envs.batched``): one step of every
agent's rows, its transitions to the replay buffers, the normalisation statistics and the episode
returns, all on the training device; no observation goes through numpy."""
from __future__ import annotations

import torch

from ...batch import map_obs
from ..envs.spec import scale_action
from ..envs.step import non_finite
from .collector import Collector
from .divergence import NonFiniteActions


class TensorCollector(Collector):
    """``Collector``'s stage for a ``BatchedEnv`` of ``agents * num_envs`` rows (agent-major),
    autoreset in the same step, so every row of every step is a transition; ``progress`` holds
    tensors where the numpy stage holds arrays (``obs``, the episodes' returns and lengths)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gammas = torch.as_tensor(self.gammas, dtype=torch.float64, device=self.device)

    def _autoreset_mode(self, envs):
        return None  # the protocol's: the same step

    def collect(self, state):
        """One step of every row; returns ``state`` with its normalisation statistics updated."""
        cfg, p, spec = self.config, self.progress, self.spec
        A, n = self.agents, cfg.num_envs
        with self.timings.phase("collect"):
            action = self._actions(state, lambda: map_obs(
                lambda x: x.reshape(A, n, *x.shape[1:]), p.obs)).to(self.dtype)
            step = self.envs.step(scale_action(action, spec))
            done = step.terminated | step.truncated
            # the host reads the device once a step: what is not finite, and whether an
            # episode ended
            finite_action, finite_obs, finite_reward, ended = torch.stack([
                torch.isfinite(action).all(), torch.isfinite(step.final_obs).all(),
                torch.isfinite(step.reward).all(), done.any()]).tolist()
            if not finite_action:  # the agent's, not the environment's, fault
                raise NonFiniteActions
            for name, finite in (("observation", finite_obs), ("reward", finite_reward)):
                if not finite:
                    raise non_finite(cfg.env_id, p.env_step + n, self.seeds, name)
            self._store_rows(p.obs, action, step, done)
            if state.norm:
                state = self._observe_rows(state, step.reward, done)
            p.episode_return = p.episode_return + step.reward.to(torch.float64)
            p.episode_length = p.episode_length + 1
            if ended:  # the returns of the episodes that ended, to the host
                for i, value in zip(done.nonzero()[:, 0].tolist(),
                                    p.episode_return[done].tolist()):
                    p.finished_returns[i // n].append(value)
                p.episode_return = torch.where(done, 0.0, p.episode_return)
                p.episode_length = torch.where(done, 0, p.episode_length)
            p.prev_done, p.obs = done, step.obs
            p.env_step += n
        return state

    def _store_rows(self, obs, action, step, done) -> None:
        """Each agent's rows of this step to its buffer: as they are, or through the n-step
        queue (``TensorNStepQueue``: the n-step rows that are complete)."""
        n = self.config.num_envs
        if self.nstep is None:
            rows = {"obs": obs, "action": action, "reward": step.reward,
                    "next_obs": step.final_obs, "terminated": step.terminated}
            env = torch.arange(len(done), device=done.device)
        else:
            rows = self.nstep.push(obs, action, step.reward, step.final_obs, step.terminated,
                                   step.truncated)
            env = rows.pop("env")
        for i, buffer in enumerate(self.buffers):
            mine = env // n == i
            buffer.add({k: v[mine] for k, v in rows.items()}, streams=(env[mine] % n).cpu())

    def _observe_rows(self, state, reward, done):
        """``state`` with the running statistics updated by this step's observations and running
        discounted returns (``R = gamma * R + r``, restarted after each episode end)."""
        p, A = self.progress, self.agents
        if p.discounted_return is None:
            p.discounted_return = torch.zeros_like(self.gammas)
        p.discounted_return = self.gammas * p.discounted_return + reward.to(torch.float64)
        obs = p.obs.to(self.dtype).reshape(A, -1, p.obs.shape[-1])
        returns = p.discounted_return.reshape(A, -1)
        mask = torch.ones_like(returns, dtype=torch.bool)
        state = self.observe_fn(state, *(x[0] if A == 1 else x for x in (obs, returns, mask)))
        p.discounted_return = torch.where(done, 0.0, p.discounted_return)
        return state
