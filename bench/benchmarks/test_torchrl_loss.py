"""The SAC losses alone, at the sizes of TorchRL's own ``test_sac_speed`` benchmark (obs 8, act 4,
batch 128, tanh MLPs of 128 cells, 2 critics), forward and forward+backward, no optimizer step.

TorchRL's networks share a trunk (8 -> 128 -> 128 -> 128 -> 64) between the actor head
(64 -> 128 -> 128 -> 8) and the Q head (64 + 4 -> 128 -> 128 -> 1), as in its benchmark. funcsac's
actor and critics each have their own copy of that depth (8 or 12 -> 128 x3 -> 64 -> 128 x2 -> out),
which costs about the same matmul work. ``pytest bench/benchmarks/test_torchrl_loss.py
--benchmark-only``.
"""
import pytest
import torch
from torch import nn

import funcsac
from funcsac import keys
from bench.common.measure import cold_first_call_s, count_flops, synced
from bench.common.workloads import batch_fields, random_batch

OBS, ACT, BATCH, CELLS = 8, 4, 128, 128
HIDDEN = (CELLS, CELLS, CELLS, 64, CELLS, CELLS)


def tanh_actor(obs_dim, act_dim, hidden):
    return funcsac.mlp(obs_dim, 2 * act_dim, hidden, activation=nn.Tanh)


def tanh_critic(obs_dim, act_dim, hidden):
    return funcsac.mlp(obs_dim + act_dim, 1, hidden, activation=nn.Tanh)


def losses(state, batch, backward=False):
    """TorchRL ``SACLoss``'s three losses from funcsac's pure functions, ``(critic, actor,
    alpha)``; with ``backward`` their gradients with respect to what each trains instead."""
    take = (lambda f: torch.func.grad(f, has_aux=True)) if backward else (lambda f: f)
    k_target, k_critic, k_actor = keys.split(state.key, 3)
    target_q = funcsac.td_target(state, batch, k_target)
    critic, _ = take(funcsac.critic_loss)(state.critic, state.static, batch.obs, batch.action,
                                          target_q, k_critic)
    actor, log_prob = take(funcsac.actor_loss)(state.actor, state.critic, state.static, batch.obs,
                                               torch.exp(state.log_alpha), k_actor)
    alpha, _ = take(funcsac.temperature_loss)(state.log_alpha, log_prob.detach(),
                                              state.hparams.target_entropy)
    return critic, actor, alpha


def _funcsac_step(compiled, backward, device):
    cfg = funcsac.SACConfig(obs_dim=OBS, act_dim=ACT, hidden_sizes=HIDDEN, device=str(device),
                            actor_factory=tanh_actor, critic_factory=tanh_critic)
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg, BATCH)
    fn = torch.compile(losses, fullgraph=True) if compiled else losses
    return lambda: fn(state, batch, backward)


def _torchrl_step(compiled, backward, device):
    torchrl_sac = pytest.importorskip("bench.peers.torchrl_sac", exc_type=ImportError)
    torch.manual_seed(0)
    loss = torchrl_sac.sac_speed_loss(OBS, ACT, CELLS).to(device)
    cfg = funcsac.SACConfig(obs_dim=OBS, act_dim=ACT, device=str(device))
    td = torchrl_sac.tensordict_batch(*batch_fields(random_batch(cfg, BATCH)))
    fn = torch.compile(loss) if compiled else loss

    def forward_backward():
        loss.zero_grad()
        out = fn(td)
        (out["loss_qvalue"] + out["loss_actor"] + out["loss_alpha"]).backward()

    return forward_backward if backward else lambda: fn(td)


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "forward+backward"])
@pytest.mark.parametrize("impl", ["torchrl-eager", "torchrl-compiled", "funcsac-eager",
                                  "funcsac-compiled"])
def test_losses(benchmark, impl, backward, device):
    torch._dynamo.reset()
    family, mode = impl.split("-")
    make = _funcsac_step if family == "funcsac" else _torchrl_step
    step = make(mode == "compiled", backward, device)
    info = benchmark.extra_info
    info.update(workload="torchrl-loss", impl=impl, device=str(device),
                passes="forward+backward" if backward else "forward")
    info["first_call_s"] = cold_first_call_s(step, device)
    info["flops"] = count_flops(make(False, backward, device))
    benchmark.group = f"torchrl-loss {info['passes']}"
    benchmark.pedantic(synced(step, device), rounds=100, iterations=1, warmup_rounds=5)
