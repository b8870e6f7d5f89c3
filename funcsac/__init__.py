"""funcsac: Soft Actor-Critic as pure functions over an immutable state, built on torch.func."""
from . import keys, presets
from .act import act
from .batch import Batch, check_batch
from .compile import compile_update
from .config import SACConfig
from .losses import actor_loss, critic_loss, temperature_loss
from .networks import apply_actor, apply_critic, apply_critics, mlp
from .optim import AdamState, adam_init, adam_update, global_norm
from .policy import tanh_gaussian_log_prob, tanh_gaussian_sample
from .stored_compile import compile_stored
from .state import HParams, SACState, Static, check_state, init_state, reset_params
from .update_many import make_update_many, update_many
from .update import (ALGORITHMS, ALGORITHMS_BY_POLICY, METRIC_NAMES, Losses, losses_for,
                     make_update, soft_update, td_target, update, update_with_aux)
# the variants register their losses (and discrete SAC its policy family) on import
from . import crossq, discrete, tqc

__all__ = [
    "keys", "presets", "act", "Batch", "check_batch", "compile_update", "compile_stored", "SACConfig", "actor_loss",
    "critic_loss", "temperature_loss", "apply_actor", "apply_critic", "apply_critics", "mlp",
    "AdamState", "adam_init", "adam_update", "global_norm", "tanh_gaussian_log_prob",
    "tanh_gaussian_sample", "HParams", "SACState", "Static", "check_state", "init_state",
    "reset_params",
    "make_update_many", "update_many", "ALGORITHMS", "ALGORITHMS_BY_POLICY", "losses_for",
    "METRIC_NAMES", "Losses", "make_update", "soft_update", "td_target", "update",
    "update_with_aux", "crossq", "discrete", "tqc", "train",
    "TrainConfig", "load", "Agent", "Report",
]


def __getattr__(name):
    # the driver (gymnasium, files, logging) loads only when asked for; the core never imports it
    if name in ("train", "TrainConfig", "load", "Agent", "Report"):
        from . import driver
        return getattr(driver, name)
    raise AttributeError(f"module 'funcsac' has no attribute {name!r}")
