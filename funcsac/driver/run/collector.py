"""The collect stage: one vector step of every agent's environments, its real transitions to the
replay buffers, the normalisation statistics and the episode returns."""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ... import keys
from ...acting import act
from ...batch import map_obs
from ...noise import held_noise
from ...normalize import observe
from ..envs.observations import obs_tensors
from ..envs.spec import scale_action
from ..envs.step import autoreset_mode, check_finite, step_env, transitions
from ...parallel import Ranks
from .divergence import NonFiniteActions
from .ranks import observed_on_every_rank
from .agents import agent_specs, per_agent, seeds_label, split_keys, vmap_agents

# exploration noise is drawn for this many vector steps at once (from one key per block), not a
# key split and a draw per step
NOISE_BLOCK = 1024


class Collector:
    """Steps ``envs`` (``[agents * num_envs]`` sub-environments, agent-major) with each agent's
    policy, or uniformly random actions before ``learning_starts``; ``progress`` (shared with the
    run) holds the observations, the keys and the episode bookkeeping it advances."""

    def __init__(self, config, spec, sac_config, family, envs, buffers, nstep, progress,
                 timings, gammas: np.ndarray, ranks: Optional[Ranks] = None):
        self.config, self.spec, self.family, self.envs = config, spec, family, envs
        self.buffers, self.nstep, self.progress, self.timings = buffers, nstep, progress, timings
        self.sac_config = sac_config
        self.dtype, self.device = sac_config.dtype, torch.device(sac_config.device)
        self.agents = len(buffers)
        self.seeds = seeds_label(agent_specs(config.seed, config.num_seeds, config.sweep))
        self.mode = self._autoreset_mode(envs)
        self.gammas = gammas  # [agents * num_envs]: each sub-env's agent's discount
        self.sample_fn = vmap_agents(lambda s, o, z: act(s, o, deterministic=False, noise=z),
                                     self.agents)
        # a data-parallel run's statistics: of every rank's rows
        self.observe_fn = observed_on_every_rank(vmap_agents(observe, self.agents),
                                                 ranks or Ranks())
        self.noise = None  # [agents, NOISE_BLOCK, num_envs, act_dim] standard normals, float64
        self.noise_held = None  # whether self.noise holds its draws

    def _autoreset_mode(self, envs):
        return autoreset_mode(envs)

    def collect(self, state):
        """One vector step; returns ``state`` with its normalisation statistics updated."""
        cfg, p, spec = self.config, self.progress, self.spec
        A, n = self.agents, cfg.num_envs
        with self.timings.phase("collect"):
            action = self._actions(state, lambda: obs_tensors(p.obs, self.sac_config, (A, n)))
            action = action.cpu().numpy()
            if not np.isfinite(action).all():  # the agent's, not the environment's, fault
                raise NonFiniteActions
            next_obs, reward, terminated, truncated, infos = step_env(
                self.envs, scale_action(action, spec), cfg.env_id, p.env_step + n, self.seeds)
            valid, true_next = transitions(self.mode, next_obs, terminated, truncated, infos,
                                           p.prev_done)
            check_finite(cfg.env_id, p.env_step + n, self.seeds, observation=true_next,
                         reward=reward)
            self._store(valid, p.obs, action, reward, true_next, terminated, truncated)
            if state.norm:
                state = self._observe(state, valid, reward, terminated | truncated)
            p.episode_return += np.where(valid, reward, 0.0)
            p.episode_length += valid
            done = (terminated | truncated) & valid
            for i in np.flatnonzero(done):
                p.finished_returns[i // n].append(float(p.episode_return[i]))
            p.episode_return[done] = 0.0
            p.episode_length[done] = 0
            p.prev_done = terminated | truncated
            p.obs = next_obs
            p.env_step += n
        return state

    def _actions(self, state, agent_obs) -> torch.Tensor:
        """This step's actions ``[agents * num_envs, action_size]``: uniformly random before
        ``learning_starts``, else samples of the agents' policies for ``agent_obs()`` (their
        observations ``[agents, num_envs, ...]`` as tensors, asked for only then), each with its
        exploration noise."""
        A, n = self.agents, self.config.num_envs
        z = self._exploration_noise()  # [A, n, act_dim]
        if self.progress.env_step < self.config.learning_starts:
            action = self.family.random_action(z)
        else:
            with torch.no_grad():
                obs, z = agent_obs(), z.to(self.dtype)
                action = self.sample_fn(state, map_obs(lambda x: x[0], obs) if A == 1 else obs,
                                        z[0] if A == 1 else z)
        return action.reshape(A * n, self.spec.action_size)

    def _store(self, valid, obs, action, reward, next_obs, terminated, truncated) -> None:
        """Add one vector step's valid transitions to their agents' buffers: as they are, or
        through the n-step queue (which emits the n-step transitions that are complete)."""
        n = self.config.num_envs
        if self.nstep is None:
            rows, env = dict(obs=obs, action=action, reward=reward, next_obs=next_obs,
                             terminated=terminated), np.arange(len(valid))
            rows = {k: map_obs(lambda x: np.asarray(x)[valid], v) for k, v in rows.items()}
            env = env[valid]
        else:
            rows = self.nstep.push(valid, obs, action, reward, next_obs, terminated, truncated)
            env = rows.pop("env")
        for i, buffer in enumerate(self.buffers):
            mine = env // n == i
            buffer.add({k: map_obs(lambda x: torch.as_tensor(x[mine]), v)
                        for k, v in rows.items()}, streams=env[mine] % n)

    def _observe(self, state, valid, reward, done):
        """``state`` with the running statistics updated by this step's observations and running
        discounted returns (``R = gamma * R + r``, restarted after each episode end)."""
        p, A = self.progress, self.agents
        if p.discounted_return is None:
            p.discounted_return = np.zeros(len(valid))
        p.discounted_return = np.where(valid, self.gammas * p.discounted_return + reward,
                                       p.discounted_return)
        as_tensor = lambda x, dtype: torch.as_tensor(  # noqa: E731
            np.asarray(x), dtype=dtype, device=self.device).reshape(A, len(valid) // A, -1)
        obs = as_tensor(p.obs, self.dtype)
        returns = as_tensor(p.discounted_return, torch.float64)[..., 0]
        mask = as_tensor(valid, torch.bool)[..., 0]
        state = self.observe_fn(state, *(x[0] if A == 1 else x for x in (obs, returns, mask)))
        p.discounted_return[done] = 0.0
        return state

    def _exploration_noise(self) -> torch.Tensor:
        """This vector step's standard normal noise ``[A, num_envs, act_dim]`` (float64), from
        the block drawn with ``progress.noise_key`` (``_noise_block``); a new block (and key)
        every ``NOISE_BLOCK`` vector steps. Its draws are held (``noise_hold``) except for the
        random actions before ``learning_starts`` when ``hold_random_actions`` is off."""
        cfg, p, n = self.config, self.progress, self.config.num_envs
        i = (p.env_step // n) % NOISE_BLOCK
        held = cfg.hold_random_actions or p.env_step >= cfg.learning_starts
        if i == 0 or p.noise_key is None:
            p.key, p.noise_key = split_keys(p.key)
            self.noise = None
        if self.noise is None or self.noise_held != held:  # a new block, a resume, or training
            self.noise = per_agent(lambda k: self._noise_block(k, held), p.noise_key)
            self.noise_held = held
        return self.noise[:, i]

    def _noise_block(self, key: torch.Tensor, held: bool = True) -> torch.Tensor:
        """One agent's ``[NOISE_BLOCK, num_envs, act_dim]`` standard normals from ``key``: a
        fresh draw each step, or with ``noise_hold`` and ``held`` each draw held
        (``funcsac.noise``; the holds restart at the block's start; the same draws either
        way)."""
        cfg = self.config
        shape = (NOISE_BLOCK, cfg.num_envs, self.spec.act_dim)
        if not cfg.noise_hold:
            return keys.normal(key, shape, torch.float64)
        k_noise, k_hold = keys.split(key, 2)
        noise = keys.normal(k_noise, shape, torch.float64)
        return held_noise(noise, k_hold, cfg.noise_hold, cfg.noise_hold_max) if held else noise
