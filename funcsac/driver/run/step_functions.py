"""What a run's learn stage calls and starts from: its step functions (``step_functions``), every
agent's first state (``initial_state``), its replay buffers (``replay_buffer``) and batches shaped
as it samples them (``example_batches``), which its steps are compiled for."""
from __future__ import annotations

from typing import Callable, Dict, Optional

import torch

from ...losses import Losses
from ...state import SACConfig, SACState, init_state
from ...updates import make_critic_update, make_update
from ...utd import make_update_many
from ..config import TrainConfig
from ..envs.spec import EnvSpec
from ..replay.buffer import ReplayBuffer, row_shapes
from ..replay.frames import FrameStacks
from ..replay.sampling import sample_batches
from .agents import agent_specs, stack, vmap_agents, with_overrides
from .seeds import AgentSeeds


def step_functions(config: TrainConfig, num_agents: int,
                   losses: Optional[Losses] = None) -> Dict[str, Callable]:
    """The functions a run's learn stage calls, ``fn(state, batches) -> (state, metrics[, aux])``
    (``vector_gradient_steps`` of every agent; per-sample TD errors with prioritized
    replay), by their names in the compile store: the update first, then, with ``policy_delay``
    > 1 at one gradient step a call, its critic half (``critic_update``) for the steps whose
    actor is not due. ``losses``: the algorithm's unless given (a data-parallel rank's)."""
    k, aux = config.vector_gradient_steps, config.prioritized
    tail = f"{'-aux' if aux else ''}-agents{num_agents}"
    if k > 1:
        return {f"update_many{tail}": vmap_agents(make_update_many(losses, aux), num_agents)}
    fns = {f"update{tail}": vmap_agents(make_update(losses, aux), num_agents)}
    if config.policy_delay > 1:
        fns[f"update-critic{tail}"] = vmap_agents(make_critic_update(losses, aux), num_agents)
    return fns


def initial_state(config: TrainConfig, sac_config: SACConfig) -> SACState:
    """Every agent's fresh state (its seed's weights, its swept hyperparameters), stacked along
    a leading agent axis when the run has several."""
    agents = agent_specs(config.seed, config.num_seeds, config.sweep)
    seeds = [AgentSeeds.of(a.seed, config.num_envs).agent for a in agents]
    return stack([with_overrides(init_state(sac_config, seed=s), a) for a, s in zip(agents, seeds)])


def replay_buffer(config: TrainConfig, spec: EnvSpec, sac_config: SACConfig,
                  capacity: Optional[int] = None) -> ReplayBuffer:
    """An empty replay buffer of the run's rows (``capacity`` default: ``buffer_size``)."""
    config = config.for_env(spec)
    priority = ((config.priority_alpha, config.priority_epsilon) if config.prioritized
                else None)
    obs_dtype = ({k: dtype for k, (_, dtype) in sac_config.obs_parts.items()}
                 or sac_config.obs_dtype)
    frames = (FrameStacks(config.frame_stack, 3, config.num_envs,
                          "obs.pixels" if config.pixels_with_state else "obs")
              if config.pixels and config.frame_stack > 1 else None)  # stacked frames kept once
    return ReplayBuffer(capacity or config.buffer_size, spec.obs_shape, spec.action_size,
                        torch.device(sac_config.device), sac_config.dtype, config.n_step, priority,
                        obs_dtype, frames)


def example_batches(config: TrainConfig, spec: EnvSpec, sac_config: SACConfig,
                    num_agents: int):
    """Batches shaped as the run's learn stage samples them (zeros): what its step is compiled
    for."""
    config = config.for_env(spec)

    def one_row():
        buffer = replay_buffer(config, spec, sac_config, capacity=1)
        buffer.add({k: torch.zeros(1, *shape) for k, shape in
                    row_shapes(spec.obs_shape, spec.action_size, config.n_step).items()})
        return buffer

    key = torch.zeros(num_agents, 2, dtype=torch.int64, device=sac_config.device)
    gamma = torch.zeros(num_agents, dtype=sac_config.dtype, device=sac_config.device)
    offline = one_row() if config.offline_data else None
    return sample_batches([one_row() for _ in range(num_agents)], offline, key,
                          config.vector_gradient_steps, config.batch_size,
                          config.offline_rows, gamma, 1.0)[0]
