"""Static SAC configuration: sizes, structure and the initial values of the hyperparameters."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

import torch
from torch import nn

from .networks import NETWORKS
from .registry import POLICIES, algorithm_of

ModuleFactory = Callable[[int, int, tuple], nn.Module]
# fields that only set the initial value of a dynamic hyperparameter (a leaf of the state)
INITIAL_VALUE_FIELDS = ("gamma", "tau", "actor_lr", "critic_lr", "alpha_lr", "init_alpha",
                        "target_entropy", "target_entropy_scale")


@dataclasses.dataclass(frozen=True)
class SACConfig:
    """Everything about an agent that does not change while it trains.

    Learning rates, ``tau``, ``gamma`` and ``target_entropy`` given here are only the initial values
    of the state's dynamic hyperparameters (0-d tensors in ``SACState.hparams``), which may be
    changed or vmapped at run time without recompiling.

    ``network`` chooses the default networks: ``"mlp"``, ReLU MLPs with one hidden layer per entry
    of ``hidden_sizes`` (the critic with ``critic_dropout``, ``critic_layer_norm`` and
    ``critic_batch_renorm``), or the residual networks ``"simba"`` (SimBa, Lee et al. 2024) and
    ``"bronet"`` (BRO, Nauman et al. 2024), with one residual block per entry of
    ``hidden_sizes``, whose entries are then all equal (the width of the residual stream):
    ``(512, 512)`` is 2 blocks of width 512 (``funcsac.networks.simba``, ``bronet``).
    ``actor_hidden_sizes`` gives the actor other sizes than the critics (empty: ``hidden_sizes``).

    ``actor_factory(input_dim, act_dim, actor_hidden_sizes)`` must build a module mapping
    ``obs [B, input_dim]`` (``input_dim`` is ``obs_dim`` unless a state vector goes beside
    images) to the policy family's head (the tanh-Gaussian's ``[B, 2 * act_dim]``, mean and raw
    log-std); ``critic_factory(input_dim, act_dim, hidden_sizes)`` one mapping the
    concatenation ``[B, input_dim + act_dim]`` to ``[B, critic_outputs]`` (1, or what the algorithm
    says: ``funcsac.registry.Algorithm.critic_outputs``); a policy family may define its
    networks otherwise (``funcsac.algorithms.discrete``). ``None`` means the default networks; a
    custom critic may use ``funcsac.networks.KeyedDropout``, whose masks ``update`` draws from
    the state's key.

    ``image_shape`` ``(C, H, W)`` makes the observations ``uint8`` images (frames stacked
    along the channels): an encoder, ``encoder_factory(image_shape, obs_dim)`` (default
    ``funcsac.encoders.drq_encoder``), maps them to ``obs_dim`` features, which the actor and the
    critics take. As in DrQ, the encoder is shared by the critics and trained by their loss
    only (the actor sees its features detached), the targets keep a polyak-averaged copy (at
    the rate ``tau x encoder_tau_scale``: DrQ's 0.05 for the encoder beside 0.01), and
    each gradient step shifts the images by up to ``image_pad`` pixels. With ``state_dim``, each
    observation is a dict of ``"pixels"`` (the images) and ``"state"`` (a ``[state_dim]`` vector
    in ``dtype``, such as proprioception), and the actor and the critics take the encoder's
    features followed by the state, ``input_dim = obs_dim + state_dim`` numbers.

    ``normalize_obs`` and ``scale_rewards`` keep running statistics in ``SACState.norm``
    (``funcsac.normalize``): ``act`` and ``update`` see ``(obs - mean) / std`` (clipped to 10) and
    rewards divided by the std of the discounted return; whoever collects the data updates them
    with ``funcsac.normalize.observe``.

    Weight decay applies to the parameters ``weight_decay_on`` names: ``"weights"``, those of >= 2
    dimensions (not biases nor normalisation scales), or ``"all"`` trainable parameters. Module
    buffers (a BatchNorm's running statistics) and parameters with ``requires_grad=False`` travel
    in the state but are never trained, decayed nor averaged into the targets.
    """

    obs_dim: int
    act_dim: int
    hidden_sizes: tuple = (256, 256)
    actor_hidden_sizes: tuple = ()  # the actor's; empty: hidden_sizes
    network: str = "mlp"  # "mlp", "simba" or "bronet": a key of funcsac.networks.NETWORKS
    num_critics: int = 2
    num_target_critics: Optional[int] = None  # REDQ's M; None means min(2, num_critics)
    gamma: float = 0.99
    tau: float = 0.005
    actor_lr: float = 3e-4
    critic_lr: float = 1e-3
    alpha_lr: float = 1e-3
    init_alpha: float = 1.0
    learn_alpha: bool = True
    target_entropy: Optional[float] = None  # None: the family's default times the scale
    target_entropy_scale: float = 1.0  # -act_dim * scale for the tanh-Gaussian (rlpd: 0.5)
    policy_delay: int = 1
    target_update_every: int = 1  # gradient steps between the targets' polyak averages (DrQ: 2)
    max_grad_norm: Optional[float] = None  # None: no clipping
    weight_decay: float = 0.0  # decoupled (AdamW); 0 gives Adam
    weight_decay_on: str = "weights"  # "weights" (parameters of >= 2 dims) or "all"
    adam_betas: tuple = (0.9, 0.999)
    alpha_adam_betas: tuple = ()  # the temperature's Adam betas; empty: adam_betas
    adam_eps: float = 1e-8
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    actor_q_reduction: str = "min"  # "min" or "mean" over the critics in the actor loss
    critic_dropout: float = 0.0  # dropout rate in the default critic (DroQ: 0.01)
    critic_layer_norm: bool = False  # LayerNorm in the default critic (DroQ)
    critic_batch_renorm: bool = False  # batch renormalisation in the default critic (CrossQ)
    actor_batch_renorm: bool = False  # batch renormalisation in the default actor (CrossQ)
    normalize_obs: bool = False  # observations normalised by running statistics in the state
    image_shape: tuple = ()  # (C, H, W) of uint8 image observations; empty: vectors of obs_dim
    state_dim: int = 0  # images: a state vector of this size beside them (dict observations)
    image_pad: int = 4  # images: DrQ's random shift of up to this many pixels (0: none)
    encoder_tau_scale: float = 1.0  # images: the target encoder's polyak rate is tau x this
    encoder_factory: Optional[Callable[[tuple, int], nn.Module]] = None  # None: drq_encoder
    scale_rewards: bool = False  # rewards divided by the running std of the discounted return
    actor_factory: Optional[ModuleFactory] = None
    critic_factory: Optional[ModuleFactory] = None
    device: str = "cpu"
    dtype: torch.dtype = torch.float32
    algorithm: str = "sac"  # the losses update trains with (funcsac.losses_for)
    policy: str = "tanh_gaussian"  # the policy family (funcsac.registry.POLICIES)
    num_quantiles: int = 25  # distributional critics: quantiles each critic outputs (K)
    drop_quantiles: int = 2  # distributional critics: top quantiles dropped per critic (d)

    def __post_init__(self):
        for name in ("hidden_sizes", "actor_hidden_sizes", "adam_betas", "alpha_adam_betas",
                     "image_shape"):
            value = getattr(self, name)
            _require(isinstance(value, (list, tuple)), name, "must be a sequence of numbers", value)
            object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "device", check_device(self.device, "SACConfig.device"))
        if self.num_target_critics is None and _is_int(self.num_critics):
            object.__setattr__(self, "num_target_critics", min(2, self.num_critics))
        if (self.target_entropy is None and _is_int(self.act_dim) and self.policy in POLICIES
                and _is_real(self.target_entropy_scale)):
            object.__setattr__(self, "target_entropy",
                               self.target_entropy_scale
                               * POLICIES[self.policy].default_target_entropy(self.act_dim))
        validate_config(self)

    @property
    def critic_outputs(self) -> int:
        """Outputs of each default critic, as the algorithm says (1: one value)."""
        return algorithm_of(self).critic_outputs(self)

    @property
    def obs_dtype(self) -> torch.dtype:
        """The dtype of observations: ``uint8`` for images, else ``dtype``."""
        return torch.uint8 if self.image_shape else self.dtype

    @property
    def obs_shape(self) -> tuple:
        """The shape of one observation (of a dict observation's ``"pixels"``):
        ``image_shape``, or ``(obs_dim,)``."""
        return self.image_shape or (self.obs_dim,)

    @property
    def obs_parts(self) -> dict:
        """The entries of a dict observation as ``key -> (shape, dtype)`` (images with a state
        vector: ``"pixels"`` and ``"state"``); empty when observations are tensors."""
        if not self.state_dim:
            return {}
        return {"pixels": (self.image_shape, torch.uint8), "state": ((self.state_dim,), self.dtype)}

    @property
    def input_dim(self) -> int:
        """What the actor and the critics take of an observation: ``obs_dim`` numbers (an
        encoder's features for images), followed by the ``state_dim`` of a dict observation."""
        return self.obs_dim + self.state_dim

    @property
    def temperature_betas(self) -> tuple:
        """The temperature's Adam betas: ``alpha_adam_betas``, or ``adam_betas`` if empty."""
        return self.alpha_adam_betas or self.adam_betas


def check_device(device, name: str = "device") -> str:
    """The canonical name of ``device`` (a string such as ``"cuda:1"``, or a ``torch.device``);
    ``ValueError`` starting with ``name``, saying which devices are available, unless this torch
    can use it."""
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"{name} {device!r} is not a torch device (such as cpu, cuda, cuda:1 "
                         f"or mps); available: {_available_devices()}") from e
    why = _why_unavailable(parsed)
    if why:
        raise ValueError(f"{name} {device!r} is not available: {why}; available: "
                         f"{_available_devices()}")
    return str(parsed)


def _why_unavailable(device: torch.device) -> str:
    """Why this torch cannot use ``device`` (not built with its kind, no such device), or ""."""
    if device.type in ("cpu", "meta"):
        return ""
    kind = device.type.upper()
    built = torch.accelerator.current_accelerator(check_available=False)
    if built is None or built.type != device.type:
        return f"this torch has no {kind} (torch {torch.__version__})"
    count = torch.accelerator.device_count()
    if count == 0:
        return f"this torch supports {kind} but finds no {kind} device"
    if device.index is not None and device.index >= count:
        return f"there is no {kind} device {device.index} ({count} found)"
    return ""


def _available_devices() -> str:
    """The devices this torch can use: cpu, then each accelerator device (``cuda:0``, ...)."""
    built = torch.accelerator.current_accelerator(check_available=True)
    count = 0 if built is None else torch.accelerator.device_count()
    return ", ".join(["cpu"] + [f"{built.type}:{i}" for i in range(count)])


def _require(ok: bool, field: str, message: str, value) -> None:
    if not ok:
        raise ValueError(f"SACConfig.{field} {message}, got {value!r}")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_real(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_network(cfg: SACConfig) -> None:
    """``network`` names an architecture; a residual one has equal widths and no MLP options."""
    _require(cfg.network in NETWORKS, "network", f"must be one of {sorted(NETWORKS)}", cfg.network)
    if cfg.network == "mlp":
        return
    for name in ("hidden_sizes", "actor_hidden_sizes"):
        sizes = getattr(cfg, name)
        _require(len(set(sizes)) <= 1, name, f"must have equal entries with network="
                 f"{cfg.network!r} (one residual block of the same width per entry)", sizes)
    for name, off in (("critic_dropout", 0.0), ("critic_layer_norm", False),
                      ("critic_batch_renorm", False), ("actor_batch_renorm", False)):
        _require(getattr(cfg, name) == off, name, f"applies to network='mlp' only, not "
                 f"{cfg.network!r}", getattr(cfg, name))


def _check_images(cfg: SACConfig, algorithm) -> None:
    """``image_shape`` is empty or three sizes; images go with an algorithm that keeps target
    networks (the target encoder) and are not normalised."""
    _require(isinstance(cfg.image_shape, tuple) and len(cfg.image_shape) in (0, 3)
             and all(_is_int(n) and n >= 1 for n in cfg.image_shape), "image_shape",
             "must be empty (vector observations) or (channels, height, width)", cfg.image_shape)
    _require(_is_int(cfg.image_pad) and cfg.image_pad >= 0, "image_pad",
             "must be an integer >= 0", cfg.image_pad)
    # a tau out of [0, 1] is left to its own check
    _require(_is_real(cfg.encoder_tau_scale) and cfg.encoder_tau_scale > 0
             and not (_is_real(cfg.tau) and 0 <= cfg.tau <= 1
                      and cfg.encoder_tau_scale * cfg.tau > 1),
             "encoder_tau_scale", f"must be a number > 0 whose product with tau ({cfg.tau}) is "
             "at most 1 (the target encoder's polyak rate)", cfg.encoder_tau_scale)
    _require(_is_int(cfg.state_dim) and cfg.state_dim >= 0, "state_dim",
             "must be an integer >= 0", cfg.state_dim)
    if not cfg.image_shape:
        _require(cfg.state_dim == 0, "state_dim", "must be 0 without image_shape (a state "
                 "vector goes beside images; vector observations are obs_dim)", cfg.state_dim)
        return
    _require(min(cfg.image_shape[1:]) >= 15 or cfg.encoder_factory is not None, "image_shape",
             "must be at least 15 x 15 pixels for the default encoder's convolutions",
             cfg.image_shape)
    _require(not cfg.normalize_obs, "normalize_obs", "must be False with image observations "
             "(images are scaled to [-0.5, 0.5], not normalised)", cfg.normalize_obs)
    _require(algorithm.target_networks, "algorithm", "must keep target networks with image "
             "observations (the targets use a polyak-averaged encoder)", cfg.algorithm)


def validate_config(cfg: SACConfig) -> None:
    """Raise ``ValueError`` naming the first invalid field of ``cfg``."""
    for name in ("policy", "algorithm"):
        _require(isinstance(getattr(cfg, name), str), name, "must be a string", getattr(cfg, name))
    algorithm = algorithm_of(cfg)  # ValueError naming the registered ones
    _check_images(cfg, algorithm)
    for name in ("obs_dim", "act_dim", "num_critics", "policy_delay", "target_update_every"):
        v = getattr(cfg, name)
        _require(_is_int(v) and v >= 1, name, "must be an integer >= 1", v)
    _require(len(cfg.hidden_sizes) >= 1 and all(_is_int(h) and h >= 1 for h in cfg.hidden_sizes),
             "hidden_sizes", "must be a non-empty sequence of integers >= 1", cfg.hidden_sizes)
    _require(all(_is_int(h) and h >= 1 for h in cfg.actor_hidden_sizes), "actor_hidden_sizes",
             "must be a sequence of integers >= 1 (empty: hidden_sizes)", cfg.actor_hidden_sizes)
    _check_network(cfg)
    m = cfg.num_target_critics
    _require(_is_int(m) and 1 <= m <= cfg.num_critics, "num_target_critics",
             f"must be an integer in [1, num_critics={cfg.num_critics}]", m)
    _require(_is_real(cfg.gamma) and 0.0 <= cfg.gamma <= 1.0, "gamma", "must be in [0, 1]",
             cfg.gamma)
    _require(_is_real(cfg.tau) and 0.0 <= cfg.tau <= 1.0, "tau", "must be in [0, 1]", cfg.tau)
    for name in ("actor_lr", "critic_lr", "alpha_lr", "adam_eps"):
        v = getattr(cfg, name)
        _require(_is_real(v) and v >= 0.0, name, "must be a finite number >= 0", v)
    _require(_is_real(cfg.init_alpha) and cfg.init_alpha > 0.0, "init_alpha", "must be > 0",
             cfg.init_alpha)
    _require(isinstance(cfg.learn_alpha, bool), "learn_alpha", "must be a bool", cfg.learn_alpha)
    _require(_is_real(cfg.target_entropy_scale), "target_entropy_scale", "must be a finite number",
             cfg.target_entropy_scale)
    _require(_is_real(cfg.target_entropy), "target_entropy", "must be a finite number or None",
             cfg.target_entropy)
    _require(cfg.max_grad_norm is None or (_is_real(cfg.max_grad_norm) and cfg.max_grad_norm > 0),
             "max_grad_norm", "must be None or a number > 0", cfg.max_grad_norm)
    _require(_is_real(cfg.weight_decay) and cfg.weight_decay >= 0.0, "weight_decay",
             "must be a number >= 0", cfg.weight_decay)
    _require(cfg.weight_decay_on in ("weights", "all"), "weight_decay_on",
             "must be 'weights' (parameters of >= 2 dims) or 'all'", cfg.weight_decay_on)
    _require(len(cfg.adam_betas) == 2
             and all(_is_real(b) and 0.0 <= b < 1.0 for b in cfg.adam_betas),
             "adam_betas", "must be two numbers in [0, 1)", cfg.adam_betas)
    _require(len(cfg.alpha_adam_betas) in (0, 2)
             and all(_is_real(b) and 0.0 <= b < 1.0 for b in cfg.alpha_adam_betas),
             "alpha_adam_betas", "must be empty or two numbers in [0, 1)", cfg.alpha_adam_betas)
    _require(_is_real(cfg.log_std_min) and _is_real(cfg.log_std_max)
             and cfg.log_std_min < cfg.log_std_max, "log_std_min",
             "must be finite and below log_std_max", (cfg.log_std_min, cfg.log_std_max))
    _require(_is_int(cfg.num_quantiles) and cfg.num_quantiles >= 1, "num_quantiles",
             "must be an integer >= 1", cfg.num_quantiles)
    _require(_is_int(cfg.drop_quantiles) and 0 <= cfg.drop_quantiles < cfg.num_quantiles,
             "drop_quantiles", f"must be an integer in [0, num_quantiles={cfg.num_quantiles})",
             cfg.drop_quantiles)
    _require(cfg.actor_q_reduction in ("min", "mean"), "actor_q_reduction",
             "must be 'min' or 'mean'", cfg.actor_q_reduction)
    _require(_is_real(cfg.critic_dropout) and 0.0 <= cfg.critic_dropout < 1.0, "critic_dropout",
             "must be in [0, 1)", cfg.critic_dropout)
    for name in ("critic_layer_norm", "critic_batch_renorm", "actor_batch_renorm",
                 "normalize_obs", "scale_rewards"):
        _require(isinstance(getattr(cfg, name), bool), name, "must be a bool", getattr(cfg, name))
    for name in ("actor_factory", "critic_factory", "encoder_factory"):
        v = getattr(cfg, name)
        _require(v is None or callable(v), name, "must be None or a callable", v)
    _require(isinstance(cfg.dtype, torch.dtype) and cfg.dtype.is_floating_point, "dtype",
             "must be a floating torch.dtype", cfg.dtype)
    algorithm.check(cfg)
