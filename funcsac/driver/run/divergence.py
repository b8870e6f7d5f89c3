"""Divergence named as divergence: an agent whose parameters or actions stop being finite stops
the run with an error that names the gradient step, the losses and the last finite checkpoint,
where the environment would otherwise be blamed for the NaN actions it was given."""
from __future__ import annotations

from typing import Dict, Optional

import optree
import torch

from ...registry import NAMESPACE


class DivergenceError(ValueError):
    """The agent's update diverged: its parameters, losses or actions became NaN or inf."""


class NonFiniteActions(ArithmeticError):
    """The policy gave NaN or inf actions (raised before they reach the environment)."""


def finite(state) -> bool:
    """Whether every floating tensor of ``state`` is finite (one host sync)."""
    leaves = [x for x in optree.tree_leaves(state, namespace=NAMESPACE) if x.is_floating_point()]
    return bool(torch.stack([torch.isfinite(x).all() for x in leaves]).all())


def diverged(what: str, env_step: int, updates: int, metrics: Optional[Dict[str, torch.Tensor]],
             config, checkpoint: Optional[str]) -> DivergenceError:
    """The error of a run whose agent diverged: ``what`` went non-finite at ``env_step`` after
    ``updates`` gradient steps; ``metrics``: the last gradient step's (the non-finite ones
    listed); ``checkpoint``: where the last checkpoint, written while the agent was finite, lies
    (``None``: none was written)."""
    losses = ""
    if metrics:
        bad = [k for k, v in metrics.items() if not bool(torch.isfinite(v).all())]
        values = ", ".join(f"{k} {float(v.float().mean()):.3g}" for k, v in metrics.items()
                           if k.endswith("loss"))
        losses = (f"; the last gradient step's losses: {values}"
                  + (f" (non-finite: {', '.join(bad)})" if bad else ""))
    kept = (f"the last checkpoint, {checkpoint}, was written before and is intact" if checkpoint
            else "no checkpoint was written before it")
    return DivergenceError(
        f"the agent diverged: {what} (NaN or inf) at env step {env_step:,}, after gradient step "
        f"{updates:,}{losses}. Lower the learning rates (critic_lr {config.critic_lr:g}, "
        f"actor_lr {config.actor_lr:g}) or clip the gradients (--max-grad-norm); {kept}")
