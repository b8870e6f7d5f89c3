"""funcsac: Soft Actor-Critic as pure functions over an immutable state, built on torch.func."""
from .accel import blas, threads

if threads.is_command():  # the funcsac command: its threads on a shared CPU, before torch loads
    threads.prepare()
if blas.requested():  # the funcsac command, or an opt-in: MKL's kernels, before torch loads
    blas.prepare()

from . import architectures, encoders  # noqa: F401  (the default network and encoder register)
from . import keys, registry
from .acting import act
from .batch import Batch, check_batch, map_obs
from .accel.compile import compile_stored, compile_update
from .config import SACConfig
from .losses import (ActorOut, CriticOut, Losses, actor_loss, critic_loss, soft_target,
                     td_target, temperature_loss)
from .architectures import mlp
from .networks import apply_actor, apply_critic, apply_critics, apply_encoder
from .optim import AdamState, adam_init, adam_update, global_norm
from .accel.memory import reuse_freed_memory
from .policy import tanh_gaussian_log_prob, tanh_gaussian_sample
from .reset import reset_params
from .state import HParams, SACState, Static, check_state, init_state
from .utd import make_update_many, update_many
from .registry import ALGORITHMS_BY_POLICY, Algorithm, losses_for, register
from .steps import actor_step, critic_step, prepare, temperature_step
from .updates import (METRIC_NAMES, critic_update, make_critic_update, make_update, sac_update,
                      soft_update, update, update_with_aux)
from . import variants

ALGORITHMS = ALGORITHMS_BY_POLICY["tanh_gaussian"]  # the tanh-Gaussian policy's, by name

__all__ = [
    "encoders", "keys", "presets", "registry", "variants", "act", "Batch",
    "check_batch", "map_obs",
    "compile_update", "compile_stored", "SACConfig", "actor_loss", "critic_loss",
    "temperature_loss", "ActorOut",
    "CriticOut", "Algorithm", "register", "apply_actor", "apply_critic", "apply_critics",
    "apply_encoder", "mlp", "AdamState", "adam_init", "adam_update", "global_norm",
    "reuse_freed_memory",
    "tanh_gaussian_log_prob", "tanh_gaussian_sample", "HParams", "SACState", "Static",
    "check_state", "init_state",
    "reset_params", "make_update_many", "update_many", "ALGORITHMS", "ALGORITHMS_BY_POLICY",
    "losses_for", "METRIC_NAMES", "Losses", "make_update", "soft_update", "td_target",
    "soft_target", "critic_step", "actor_step", "temperature_step", "prepare", "sac_update",
    "critic_update", "make_critic_update", "update", "update_with_aux", "train", "TrainConfig",
    "load", "Agent", "Report",
]


def __getattr__(name):
    # the driver (gymnasium, files, logging) loads only when asked for; the core never imports it
    if name in ("train", "TrainConfig", "load", "Agent", "Report", "presets"):
        from . import driver
        return getattr(driver, name)
    raise AttributeError(f"module 'funcsac' has no attribute {name!r}")
