"""TQC, Truncated Quantile Critics (Kuznetsov et al. 2020, "Controlling Overestimation Bias with
Truncated Mixture of Continuous Distributional Quantile Critics"): ``SACConfig(algorithm="tqc")``.

Each of the N critics outputs K = ``num_quantiles`` quantiles of the return, ``Z [N, B, K]``, at
the fractions ``tau_k = (k + 0.5) / K``. The target pools the N * K quantiles of the target critics
at ``(s', a')``, sorts them and drops the top N * d (d = ``drop_quantiles``), which controls the
overestimation that SAC's min over critics controls; ``num_target_critics`` and
``actor_q_reduction`` do not apply. A custom ``critic_factory`` must map
``[B, obs_dim + act_dim]`` to ``[B, num_quantiles]``; the default critic does.

The losses follow the paper's code (github.com/SamsungLabs/tqc_pytorch) and sb3-contrib's TQC,
except that the critic loss is summed over the critics, as SAC's is here, where they average
(a constant factor Adam's steps hardly notice; gradient clipping does).
"""
from __future__ import annotations

import dataclasses
from typing import Tuple

import torch

from ...batch import Batch
from ...losses import ActorOut, CriticOut, Losses, policy_loss, soft_target
from ...networks import Params, apply_critics
from ...registry import Algorithm, is_int, register, setting
from ...state import SACState, Static


def apply_quantile_critics(static: Static, critic: Params, obs: torch.Tensor,
                           action: torch.Tensor, key=None) -> torch.Tensor:
    """The ensemble's quantiles ``Z [N, B, K]`` (``apply_critics`` with the quantile axis kept
    when K is 1); ``ValueError`` if a critic does not output ``[B, num_quantiles]``."""
    k = static.config.algorithm_options.num_quantiles
    z = apply_critics(static.critic, critic, obs, action, key)
    z = z.unsqueeze(-1) if z.dim() == 2 else z
    if z.shape[2:] != (k,):
        raise ValueError(f"the critics of algorithm {static.config.algorithm!r} must map "
                         f"[B, obs_dim + act_dim] to [B, num_quantiles={k}], got "
                         f"[B, {', '.join(map(str, z.shape[2:]))}]")
    return z


def truncate(z: torch.Tensor, drop: int) -> torch.Tensor:
    """The N critics' quantiles ``z [N, B, K]`` pooled per row, sorted, the top ``N * drop``
    left out: ``[B, N * (K - drop)]``, ascending."""
    n, _, k = z.shape
    return z.movedim(0, 1).flatten(1).sort(-1).values[:, :n * (k - drop)]


def truncated_target(state: SACState, batch: Batch, key: torch.Tensor) -> torch.Tensor:
    """``soft_target`` with each atom ``z`` of the truncated pool of the target critics'
    quantiles at ``(s', a')`` as a value: ``[B, N * (K - d)]``."""
    static, drop = state.static, state.config.algorithm_options.drop_quantiles
    return soft_target(state, batch, key, lambda next_action, k: truncate(
        apply_quantile_critics(static, state.target_critic, batch.next_obs, next_action, k),
        drop))


def quantile_huber(z: torch.Tensor, atoms: torch.Tensor) -> torch.Tensor:
    """Quantile Huber loss (kappa 1) of the quantiles ``z [N, B, K]`` at ``tau_k = (k + 0.5) / K``
    against the target atoms ``atoms [B, M]``, averaged over the K quantiles and the M atoms:
    ``[N, B]``. With ``u = atom - z_k``: ``|tau_k - 1{u < 0}| * huber(u)``."""
    k = z.shape[-1]
    tau = (torch.arange(k, dtype=z.dtype, device=z.device) + 0.5) / k
    u = atoms[:, None, :] - z[..., None]  # [N, B, K, M]
    huber = torch.where(u.abs() > 1.0, u.abs() - 0.5, 0.5 * u.square())
    return ((tau[:, None] - (u < 0).to(z.dtype)).abs() * huber).mean((-2, -1))


def quantile_critic_loss(critic: Params, state: SACState, batch: Batch, target: torch.Tensor,
                         key: torch.Tensor) -> Tuple[torch.Tensor, CriticOut]:
    """``mean_B weight * quantile_huber(Z_i, target)`` summed over the N critics, for the
    target atoms ``target [B, M]``; returns ``(loss, CriticOut(Q [N, B], target [B]))``, Q
    the mean of each critic's quantiles and target the mean of the atoms."""
    z = apply_quantile_critics(state.static, critic, batch.obs, batch.action, key)
    loss = (batch.weight * quantile_huber(z, target)).mean(-1).sum(0)
    return loss, CriticOut(z.mean(-1), target.mean(-1))


def quantile_actor_loss(actor: Params, state: SACState, batch: Batch,
                        key: torch.Tensor) -> Tuple[torch.Tensor, ActorOut]:
    """``funcsac.losses.policy_loss`` with Q the mean of all N critics' K quantiles."""
    return policy_loss(actor, state, batch.obs, key, lambda a, k: apply_quantile_critics(
        state.static, state.critic, batch.obs, a, k).mean((0, 2)))


@dataclasses.dataclass(frozen=True)
class TQCOptions:
    """TQC's options (``SACConfig.algorithm_options``)."""

    num_quantiles: int = setting(25, "quantiles of the return each critic outputs (K)")
    drop_quantiles: int = setting(
        2, "top quantiles per critic dropped from the pooled target (d; the target keeps "
        "N * (K - d) of the N * K)")

    def check(self, config) -> None:
        """``ValueError`` unless ``1 <= num_quantiles`` and ``0 <= drop_quantiles <
        num_quantiles``."""
        k, d = self.num_quantiles, self.drop_quantiles
        check_num_quantiles(k)
        if not (is_int(d) and 0 <= d < k):
            raise ValueError(f"SACConfig.drop_quantiles must be an integer in [0, num_quantiles="
                             f"{k}), got {d!r}")


def check_num_quantiles(k) -> None:
    """``ValueError`` unless ``num_quantiles`` ``k`` is an integer >= 1."""
    if not (is_int(k) and k >= 1):
        raise ValueError(f"SACConfig.num_quantiles must be an integer >= 1, got {k!r}")


def quantile_outputs(config) -> int:
    """Each critic's outputs: ``num_quantiles`` (an ``Algorithm``'s ``critic_outputs``)."""
    return config.algorithm_options.num_quantiles


TQC = register(Algorithm(
    "tqc", Losses(critic=quantile_critic_loss, actor=quantile_actor_loss,
                  target=truncated_target),
    help="truncated quantile critics: num_quantiles per critic, the top drop_quantiles of each "
         "left out of the pooled target",
    critic_outputs=quantile_outputs, options=TQCOptions))
