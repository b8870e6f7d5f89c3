"""Several gradient steps in one call (update-to-data ratio > 1), as one compiled graph.

With ``policy_delay`` d > 1 dividing the number of batches, the steps run in rlpd's order (and
REDQ's): d critic steps, then one actor and one temperature step against the newest critics on
the last of those batches, and so on; nothing is computed and thrown away. Otherwise each batch
gets a whole ``update`` (d = 1; a d that does not divide, or an algorithm with an update of its
own: the actor steps where ``update`` counts them).

Under ``torch.compile`` the critic steps run in ``torch._higher_order_ops.scan``, which traces the
step once (an unrolled loop compiles in time growing with the steps; bench/results/RESULTS.md).
Eagerly they run in a Python loop.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch
import torch.utils._pytree as pytree
from torch._higher_order_ops.scan import scan

from . import keys
from .batch import Batch
from .losses import Losses
from .registry import algorithm_of
from .state import SACState
from .steps import Metrics, prepare, steps_for, temperature_step
from .updates import make_critic_update, make_update


def _steps(step: Callable, state, batches: Batch):
    """``step(state, batch) -> (state, *outputs)`` applied once per leading index of
    ``batches``, in order: the final state and the outputs stacked ``[n, ...]`` (a scan when
    compiling, a loop when eager: an eager scan re-traces)."""
    if not torch.compiler.is_compiling():
        history = []
        for i in range(batches.obs.shape[0]):
            state, *outputs = step(state, Batch(*(x[i] for x in batches)))
            history.append(outputs)
        return (state, *pytree.tree_map(lambda *xs: torch.stack(xs), *history))
    leaves, spec = pytree.tree_flatten(state)

    def body(carry, batch):
        new_state, *outputs = step(pytree.tree_unflatten(carry, spec), Batch(*batch))
        # scan forbids returning an input unchanged (aliasing), so copy; inductor fuses the
        # copies of freshly computed leaves away, leaving only those passed through
        return [x.clone() for x in pytree.tree_leaves(new_state)], outputs

    final, outputs = scan(body, leaves, tuple(batches))
    return (pytree.tree_unflatten(final, spec), *outputs)


def policy_update(state: SACState, batch: Batch, losses: Optional[Losses] = None
                  ) -> Tuple[SACState, Metrics]:
    """The actor's step on ``batch`` against the state's critics and the temperature's on its
    entropy, drawing from ``state.key`` (moved on); ``state.step`` counts critic steps and
    stays."""
    _, actor_step = steps_for(state)
    key, k_actor = keys.split(state.key, 2)
    state, actor_metrics = actor_step(state, prepare(state, batch), k_actor, losses)
    state, temperature_metrics = temperature_step(state, actor_metrics["entropy"], losses)
    return state.replace(key=key), {**actor_metrics, **temperature_metrics}


def make_update_many(losses: Optional[Losses] = None, with_aux: bool = False) -> Callable:
    """``update_many(state, batches)`` for ``batches``, a ``Batch`` of ``[utd, B, ...]``
    tensors: with ``policy_delay`` d > 1 dividing ``utd`` and SAC's composition of the steps,
    ``utd / d`` blocks of d critic steps followed by one ``policy_update`` on the block's last
    batch; otherwise ``utd`` sequential updates (``make_update(losses, with_aux)``). Returns the
    final state and the updates' other outputs stacked: the critic's metrics (and ``with_aux``
    the per-row ``td_error``) ``[utd, ...]``, the actor's ``[utd / d, ...]``."""
    update, critic_update = make_update(losses, with_aux), make_critic_update(losses, with_aux)

    def update_many(state: SACState, batches: Batch):
        d, utd = state.config.policy_delay, batches.obs.shape[0]
        if d == 1 or utd % d or algorithm_of(state.config).update is not None:
            return _steps(update, state, batches)
        critic_outputs, actor_metrics = [], []
        for block in range(utd // d):
            rows = Batch(*(x[block * d:(block + 1) * d] for x in batches))
            state, *outputs = _steps(critic_update, state, rows)
            state, metrics = policy_update(state, Batch(*(x[-1] for x in rows)), losses)
            critic_outputs.append(outputs), actor_metrics.append(metrics)
        outputs = pytree.tree_map(lambda *xs: torch.cat(xs), *critic_outputs)
        stacked = pytree.tree_map(lambda *xs: torch.stack(xs), *actor_metrics)
        return (state, {**outputs[0], **stacked}, *outputs[1:])

    return update_many


update_many = make_update_many()
