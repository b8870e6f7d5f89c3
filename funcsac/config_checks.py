"""The checks of a ``SACConfig``: ``validate_config`` raises ``ValueError`` naming the first
invalid field, what it must be and what it got."""
from __future__ import annotations

import torch

from .precision import PRECISIONS
from .registry import COMPONENTS, algorithm_of, is_int, is_real, variant_of


def require(ok: bool, field: str, message: str, value) -> None:
    if not ok:
        raise ValueError(f"SACConfig.{field} {message}, got {value!r}")


def _check_variants(cfg) -> None:
    """Each component's variant holds options of its own kind and takes the config (its own
    ``check`` and its options')."""
    for component in COMPONENTS:
        variant, name = variant_of(cfg, component), f"{component}_options"
        options, kind = getattr(cfg, name), variant.options
        require(options is None if kind is None else isinstance(options, kind), name,
                 f"must be {'None' if kind is None else 'a ' + kind.__qualname__} for {component} "
                 f"{variant.name!r}", options)
        if component != "algorithm":  # the algorithm's check runs last, on a config checked whole
            variant.check(cfg)
        if hasattr(options, "check"):
            options.check(cfg)


def _check_images(cfg, algorithm) -> None:
    """``image_shape`` is empty or three sizes; images go with an algorithm that keeps target
    networks (the target encoder) and are not normalised."""
    require(isinstance(cfg.image_shape, tuple) and len(cfg.image_shape) in (0, 3)
             and all(is_int(n) and n >= 1 for n in cfg.image_shape), "image_shape",
             "must be empty (vector observations) or (channels, height, width)", cfg.image_shape)
    require(is_int(cfg.state_dim) and cfg.state_dim >= 0, "state_dim",
             "must be an integer >= 0", cfg.state_dim)
    require(is_int(cfg.privileged_dim) and cfg.privileged_dim >= 0, "privileged_dim",
             "must be an integer >= 0", cfg.privileged_dim)
    require(not (cfg.image_shape and cfg.privileged_dim), "privileged_dim", "must be 0 with "
             "image observations (privileged numbers end vector observations)", cfg.privileged_dim)
    if not cfg.image_shape:
        require(cfg.state_dim == 0, "state_dim", "must be 0 without image_shape (a state "
                 "vector goes beside images; vector observations are obs_dim)", cfg.state_dim)
        return
    require(not cfg.normalize_obs, "normalize_obs", "must be False with image observations "
             "(images are scaled to [-0.5, 0.5], not normalised)", cfg.normalize_obs)
    require(algorithm.target_networks, "algorithm", "must keep target networks with image "
             "observations (the targets use a polyak-averaged encoder)", cfg.algorithm)


def validate_config(cfg) -> None:
    """Raise ``ValueError`` naming the first invalid field of ``cfg``."""
    for name in ("policy", "algorithm", "network", "encoder"):
        require(isinstance(getattr(cfg, name), str), name, "must be a string", getattr(cfg, name))
    algorithm = algorithm_of(cfg)  # ValueError naming the registered ones
    _check_images(cfg, algorithm)
    for name in ("obs_dim", "act_dim", "num_critics", "policy_delay", "target_update_every"):
        v = getattr(cfg, name)
        require(is_int(v) and v >= 1, name, "must be an integer >= 1", v)
    require(len(cfg.hidden_sizes) >= 1 and all(is_int(h) and h >= 1 for h in cfg.hidden_sizes),
             "hidden_sizes", "must be a non-empty sequence of integers >= 1", cfg.hidden_sizes)
    require(all(is_int(h) and h >= 1 for h in cfg.actor_hidden_sizes), "actor_hidden_sizes",
             "must be a sequence of integers >= 1 (empty: hidden_sizes)", cfg.actor_hidden_sizes)
    m = cfg.num_target_critics
    require(is_int(m) and 1 <= m <= cfg.num_critics, "num_target_critics",
             f"must be an integer in [1, num_critics={cfg.num_critics}]", m)
    require(is_real(cfg.gamma) and 0.0 <= cfg.gamma <= 1.0, "gamma", "must be in [0, 1]",
             cfg.gamma)
    require(is_real(cfg.tau) and 0.0 <= cfg.tau <= 1.0, "tau", "must be in [0, 1]", cfg.tau)
    for name in ("actor_lr", "critic_lr", "alpha_lr", "adam_eps"):
        v = getattr(cfg, name)
        require(is_real(v) and v >= 0.0, name, "must be a finite number >= 0", v)
    require(is_real(cfg.init_alpha) and cfg.init_alpha > 0.0, "init_alpha", "must be > 0",
             cfg.init_alpha)
    require(isinstance(cfg.learn_alpha, bool), "learn_alpha", "must be a bool", cfg.learn_alpha)
    require(is_real(cfg.target_entropy_scale), "target_entropy_scale", "must be a finite number",
             cfg.target_entropy_scale)
    require(is_real(cfg.target_entropy), "target_entropy", "must be a finite number or None",
             cfg.target_entropy)
    require(cfg.max_grad_norm is None or (is_real(cfg.max_grad_norm) and cfg.max_grad_norm > 0),
             "max_grad_norm", "must be None or a number > 0", cfg.max_grad_norm)
    require(is_real(cfg.weight_decay) and cfg.weight_decay >= 0.0, "weight_decay",
             "must be a number >= 0", cfg.weight_decay)
    require(cfg.weight_decay_on in ("weights", "all"), "weight_decay_on",
             "must be 'weights' (parameters of >= 2 dims) or 'all'", cfg.weight_decay_on)
    require(len(cfg.adam_betas) == 2
             and all(is_real(b) and 0.0 <= b < 1.0 for b in cfg.adam_betas),
             "adam_betas", "must be two numbers in [0, 1)", cfg.adam_betas)
    require(len(cfg.alpha_adam_betas) in (0, 2)
             and all(is_real(b) and 0.0 <= b < 1.0 for b in cfg.alpha_adam_betas),
             "alpha_adam_betas", "must be empty or two numbers in [0, 1)", cfg.alpha_adam_betas)
    require(is_real(cfg.log_std_min) and is_real(cfg.log_std_max)
             and cfg.log_std_min < cfg.log_std_max, "log_std_min",
             "must be finite and below log_std_max", (cfg.log_std_min, cfg.log_std_max))
    require(cfg.log_std_squash in ("tanh", "clip"), "log_std_squash",
             "must be 'tanh' or 'clip'", cfg.log_std_squash)
    for name in ("actor_q_reduction", "target_q_reduction"):
        require(getattr(cfg, name) in ("min", "mean"), name, "must be 'min' or 'mean'",
                 getattr(cfg, name))
    for name in ("normalize_obs", "scale_rewards"):
        require(isinstance(getattr(cfg, name), bool), name, "must be a bool", getattr(cfg, name))
    require(cfg.return_bound is None or (is_real(cfg.return_bound) and cfg.return_bound > 0),
             "return_bound", "must be None or a number > 0", cfg.return_bound)
    require(cfg.return_bound is None or cfg.scale_rewards, "return_bound",
             "must be None without scale_rewards (it bounds the scaled returns)", cfg.return_bound)
    require(is_real(cfg.lr_decay_to) and 0.0 <= cfg.lr_decay_to <= 1.0, "lr_decay_to",
             "must be in [0, 1]", cfg.lr_decay_to)
    require(is_int(cfg.lr_decay_steps) and cfg.lr_decay_steps >= 1, "lr_decay_steps",
             "must be an integer >= 1", cfg.lr_decay_steps)
    require(cfg.lr_decay_shape in ("linear", "cosine"), "lr_decay_shape",
             "must be 'linear' or 'cosine'", cfg.lr_decay_shape)
    for name in ("actor_factory", "critic_factory", "encoder_factory"):
        v = getattr(cfg, name)
        require(v is None or callable(v), name, "must be None or a callable", v)
    require(isinstance(cfg.dtype, torch.dtype) and cfg.dtype.is_floating_point, "dtype",
             "must be a floating torch.dtype", cfg.dtype)
    require(cfg.precision in tuple(PRECISIONS), "precision", f"must be one of {tuple(PRECISIONS)}",
             cfg.precision)
    require(cfg.precision == "fp32" or cfg.dtype == torch.float32, "precision",
             f"must be 'fp32' with dtype {cfg.dtype} (bf16 products take float32 parameters)",
             cfg.precision)
    _check_variants(cfg)
    algorithm.check(cfg)
