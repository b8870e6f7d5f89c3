"""Policy families: the interface each implements (``PolicyFamily``) and the tanh-squashed
Gaussian's sampling and log-probabilities."""
from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from . import keys
from .networks import apply_actor
from .registry import register_policy

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def tanh_gaussian_log_prob(mean: torch.Tensor, log_std: torch.Tensor,
                           pre_tanh: torch.Tensor) -> torch.Tensor:
    """``log pi(tanh(u))`` for pre-squash samples ``u [B, act]``, summed over actions -> ``[B]``.

    Uses ``log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))``, exact and stable for large |u|.
    """
    z = (pre_tanh - mean) * torch.exp(-log_std)
    gaussian = -0.5 * z.square() - log_std - _HALF_LOG_2PI
    log_det = 2.0 * (math.log(2.0) - pre_tanh - F.softplus(-2.0 * pre_tanh))
    return (gaussian - log_det).sum(-1)


def gaussian_pre_tanh(mean: torch.Tensor, log_std: torch.Tensor, key: Optional[torch.Tensor],
                      noise: Optional[torch.Tensor] = None) -> torch.Tensor:
    """A reparameterised pre-squash sample ``mean + exp(log_std) * noise`` [B, act]; ``noise``
    (standard normal, shaped like ``mean``) is drawn from ``key`` unless given. ``tanh`` of the
    sample is the action."""
    if noise is None:
        noise = keys.normal(key, mean.shape, mean.dtype)
    return mean + torch.exp(log_std) * noise


def tanh_gaussian_sample(mean: torch.Tensor, log_std: torch.Tensor,
                         key: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised sample: ``(action [B, act] in (-1, 1), log_prob [B])``, noise from
    ``key``."""
    pre_tanh = gaussian_pre_tanh(mean, log_std, key)
    return torch.tanh(pre_tanh), tanh_gaussian_log_prob(mean, log_std, pre_tanh)


def actor_obs(cfg, obs: torch.Tensor) -> torch.Tensor:
    """What the actor sees of observations ``obs [B, ...]``: all of them, but the last
    ``privileged_dim`` numbers of vectors that hold them (``[B, obs_dim]``)."""
    return obs[..., :cfg.obs_dim] if cfg.privileged_dim else obs


def actor_gaussian(static, actor, obs: torch.Tensor,
                   stats=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """The tanh-Gaussian actor's ``(mean, log_std)`` ``[B, act]`` before the tanh for ``obs``
    (``actor_obs`` of it), the log-std bounded as the config says (``apply_actor``;
    ``stats``: its batch statistics)."""
    cfg = static.config
    return apply_actor(static.actor, actor, actor_obs(cfg, obs), cfg.log_std_min,
                       cfg.log_std_max, stats, cfg.log_std_squash)


class PolicyFamily:
    """The interface of a policy family, all that ``init_state``, ``act``, batch checks and the
    driver use of one; the losses that train it are ``funcsac.losses_for``'s.

    Sizes: ``act_dim`` is the action dimension of a continuous family and the number of actions
    of a discrete one. ``noise`` is standard normal ``[B, act_dim]``, from which a family draws
    its stochastic and uniformly random actions, so that a driver holds one kind of noise. To add
    a family: subclass this, register an instance (``funcsac.registry.register_policy``;
    ``SACConfig.policy`` names it) and an algorithm for it (``funcsac.registry.register``).
    """

    action_space = "actions of the policy's space"  # what valid actions are, for messages
    # the return horizon of the transitions a driver collects when it is not told one (1:
    # one-step transitions; the driver's ``n_step``)
    default_n_step = 1
    # environment steps of uniform random actions a driver takes before training when it is not
    # told (the driver's ``learning_starts``; 5,000: CleanRL's SAC)
    default_learning_starts = 5000
    # how a driver holds each draw of the exploration noise when it is not told
    # (``funcsac.noise``: P(n) ~ n^-default_noise_hold for n in 1..default_noise_hold_max; 0: a
    # new draw every step)
    default_noise_hold = 0.0
    default_noise_hold_max = 16

    def head_size(self, act_dim: int) -> int:
        """The width of the actor network's output."""
        raise NotImplementedError

    def action_size(self, act_dim: int) -> int:
        """The width of an action in a ``Batch`` (``action [B, action_size]``)."""
        raise NotImplementedError

    def default_target_entropy(self, act_dim: int) -> float:
        """The target entropy when ``SACConfig.target_entropy`` is None (nats)."""
        raise NotImplementedError

    def critic_dims(self, input_dim: int, act_dim: int, outputs: int) -> tuple:
        """``(in_dim, out_dim)`` of the default critic network, for observations of
        ``input_dim`` numbers and an algorithm whose critics output ``outputs`` numbers a
        value."""
        raise NotImplementedError

    def act(self, static, actor, obs: torch.Tensor,
            noise: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Actions ``[B, action_size]`` for ``obs [B, obs_dim]``: the deterministic one when
        ``noise`` is None, else a sample drawn with ``noise``."""
        raise NotImplementedError

    def random_action(self, noise: torch.Tensor) -> torch.Tensor:
        """Uniformly random actions ``[B, action_size]`` drawn with ``noise [B, act_dim]``."""
        raise NotImplementedError

    def valid_actions(self, action: torch.Tensor, act_dim: int) -> torch.Tensor:
        """Whether every action of ``action [B, action_size]`` lies in the policy's action space
        (a 0-d bool tensor)."""
        raise NotImplementedError


class TanhGaussian(PolicyFamily):
    """Continuous actions in ``[-1, 1]^act_dim``: ``tanh`` of a Gaussian whose mean and raw
    log-std the actor outputs (``[B, 2 * act_dim]``)."""

    action_space = "values in the policy's [-1, 1] space"

    def head_size(self, act_dim):
        return 2 * act_dim

    def action_size(self, act_dim):
        return act_dim

    def default_target_entropy(self, act_dim):
        return -float(act_dim)

    def critic_dims(self, input_dim, act_dim, outputs):
        return input_dim + act_dim, outputs  # Q(s, a) of the concatenation

    def act(self, static, actor, obs, noise=None):
        mean, log_std = actor_gaussian(static, actor, obs)
        return torch.tanh(mean if noise is None else gaussian_pre_tanh(mean, log_std, None, noise))

    def random_action(self, noise):
        return torch.special.ndtr(noise) * 2 - 1  # 2 Phi(z) - 1: uniform in [-1, 1]

    def valid_actions(self, action, act_dim):
        return (action.abs() <= 1.0).all()


register_policy("tanh_gaussian", TanhGaussian())
