"""The agent as one immutable pytree, and its initialisation."""
from __future__ import annotations

import dataclasses
import functools
import math
import threading
import warnings
from typing import Any, Dict, NamedTuple, Optional

import optree
import torch
import torch.utils._pytree as torch_pytree
from torch import nn

from . import keys
from .config import SACConfig
from .architectures import build_network
from .accel.product_order import order_products
from .networks import Params, cast_params, decay_mask, module_params, param_shapes, stack_params
from .precision import PRECISIONS, set_products_dtype
from .normalize import init_stats
from .optim import AdamState, adam_init
from .platform.devices import bf16_products_slow
from .registry import NAMESPACE, POLICIES, algorithm_of, variant_of


class HParams(NamedTuple):
    """Hyperparameters that may change at run time or be vmapped: 0-d tensors."""

    actor_lr: torch.Tensor
    critic_lr: torch.Tensor
    alpha_lr: torch.Tensor
    tau: torch.Tensor
    gamma: torch.Tensor
    target_entropy: torch.Tensor


@dataclasses.dataclass(frozen=True, eq=False)
class Static:
    """The non-tensor part of a state: the config, the weightless module templates (``encoder``
    ``None`` for vector observations) and, per network, its trainable parameter names mapped to
    whether weight decay applies to each (the rest of a parameter dict, buffers and frozen
    parameters, is never trained).

    Two ``Static`` with equal configs are equal, so states built from the same config share one
    pytree structure.
    """

    config: SACConfig
    actor: nn.Module
    critic: nn.Module
    actor_trainable: Dict[str, bool]
    critic_trainable: Dict[str, bool]
    encoder: Optional[nn.Module] = None
    encoder_trainable: Dict[str, bool] = dataclasses.field(default_factory=dict)
    extra: Dict[str, nn.Module] = dataclasses.field(default_factory=dict)

    def __eq__(self, other):
        return isinstance(other, Static) and self.config == other.config

    def __hash__(self):
        return hash(self.config)


@dataclasses.dataclass(frozen=True)
class SACState:
    """Everything that changes while training; ``static`` is pytree metadata, not a leaf.

    Shapes: ``critic`` and ``target_critic`` leaves have a leading ``[num_critics]`` axis
    (``target_critic`` is empty for an algorithm without target networks);
    ``log_alpha`` and ``step`` (int64) are 0-d; ``key`` is ``[2]`` int64. ``norm`` holds the
    running statistics of observations (``"obs"``) and discounted returns (``"return"``, and
    with ``return_bound`` the largest |return| seen, ``"return_max"``, 0-d float64) when the
    config normalises them, and is empty otherwise. ``encoder`` and ``target_encoder`` hold the
    image encoder's tensors (not stacked: the critics share it), and are empty for vector
    observations. ``extra`` holds what the algorithm keeps of its own (``Algorithm.init_extra``:
    BRO's optimistic actor, its optimizer and its adjustments), empty for most.
    """

    actor: Params
    critic: Params
    target_critic: Params
    actor_opt: AdamState
    critic_opt: AdamState
    alpha_opt: AdamState
    log_alpha: torch.Tensor
    key: torch.Tensor
    step: torch.Tensor
    hparams: HParams
    norm: Dict[str, Any]
    encoder: Params
    target_encoder: Params
    extra: Dict[str, Any]
    static: Static

    @property
    def config(self) -> SACConfig:
        return self.static.config

    def replace(self, **changes) -> "SACState":
        """A copy with some fields replaced."""
        return dataclasses.replace(self, **changes)


_LEAF_FIELDS = tuple(f.name for f in dataclasses.fields(SACState) if f.name != "static")


def _flatten(state: SACState):
    return [getattr(state, n) for n in _LEAF_FIELDS], state.static


def _unflatten(static: Static, children) -> SACState:
    return SACState(*children, static=static)


optree.register_pytree_node(SACState, _flatten, _unflatten, namespace=NAMESPACE)
torch_pytree.register_pytree_node(SACState, _flatten, lambda ch, static: _unflatten(static, ch),
                                  serialized_type_name="funcsac.SACState")

_INIT_LOCK = threading.Lock()  # init_state seeds the process-wide torch RNG


def _build(config: SACConfig, num_critics: int):
    """An actor module and a list of ``num_critics`` critic modules from the config's factories
    (by default, the config's network for its policy family)."""
    family = POLICIES[config.policy]
    dims = (config.input_dim, config.act_dim)
    actor = (config.actor_factory(*dims, config.actor_hidden_sizes or config.hidden_sizes)
             if config.actor_factory else
             build_network(config, "actor", config.input_dim, family.head_size(config.act_dim)))
    seen = (config.critic_input_dim, config.act_dim)  # the critics see the privileged numbers
    critic_dims = family.critic_dims(*seen, config.critic_outputs)
    critic = (functools.partial(config.critic_factory, *seen, config.hidden_sizes)
              if config.critic_factory else
              functools.partial(build_network, config, "critic", *critic_dims))
    return actor, [critic() for _ in range(num_critics)]


def _build_encoder(config: SACConfig) -> Optional[nn.Module]:
    """The image encoder (``None`` for vector observations)."""
    if not config.image_shape:
        return None
    if config.encoder_factory:
        return config.encoder_factory(config.image_shape, config.obs_dim)
    return variant_of(config, "encoder").build(config.image_shape, config.obs_dim,
                                               config.encoder_options)


@functools.lru_cache(maxsize=256)
def static_for(config: SACConfig) -> Static:
    """The shared ``Static`` of a config: weightless templates built once per config (the 256
    configs used last are kept; a ``Static`` built again for a config equals the first)."""
    with torch.device("meta"):
        actor, (critic,) = _build(config, 1)
        encoder = _build_encoder(config)
        extra = algorithm_of(config).extra_modules(config)
    if encoder is not None and any(n.startswith(ENCODER_PREFIX) for n in critic.state_dict()):
        raise ValueError(f"the critic has tensors named {ENCODER_PREFIX!r}..., the names "
                         "the shared image encoder's take beside them; rename its submodule")
    for template in (actor, critic, encoder, *extra.values()):
        if isinstance(template, nn.Module):
            set_products_dtype(template, PRECISIONS[config.precision])
    order_products(critic, config.num_critics, config.device)
    on = config.weight_decay_on
    return Static(config, actor, critic, decay_mask(actor, on), decay_mask(critic, on), encoder,
                  {} if encoder is None else decay_mask(encoder, on), extra)


@functools.lru_cache(maxsize=None)
def _warn_if_slow_bf16(device: str) -> None:
    """A warning, once per device, where bfloat16 products are slower than float32 ones."""
    why = bf16_products_slow(device)
    if why:
        warnings.warn(f"precision bf16 on {device}: {why}, so its bfloat16 products are "
                      "emulated, slower than float32 (precision fp32 is faster here)",
                      stacklevel=3)


ENCODER_PREFIX = "encoder."


def critic_and_encoder(critic: Params, encoder: Params) -> Params:
    """One dict of the critics' and the encoder's tensors (the encoder's names prefixed
    ``"encoder."``): what the critic loss differentiates and the critics' Adam moments cover."""
    return {**critic, **{ENCODER_PREFIX + k: v for k, v in encoder.items()}}


def split_critic_and_encoder(params: Params) -> tuple:
    """``critic_and_encoder``'s inverse: ``(critic, encoder)``."""
    n = len(ENCODER_PREFIX)
    return ({k: v for k, v in params.items() if not k.startswith(ENCODER_PREFIX)},
            {k[n:]: v for k, v in params.items() if k.startswith(ENCODER_PREFIX)})


def trainable(params: Params, names) -> Params:
    """The entries of ``params`` named in ``names`` (e.g. ``Static.actor_trainable``)."""
    return {k: params[k] for k in names}


def init_state(config: SACConfig, seed: int = 0) -> SACState:
    """A fresh agent: N independently initialised critics, targets equal to them (none for an
    algorithm without target networks), zero moments (for the trainable parameters only); with
    image observations an encoder (drawn after the networks) and its target copy, whose
    trainable parameters the critics' moments cover as ``"encoder.<name>"``.

    Weights are drawn from ``torch.manual_seed(seed)`` inside a forked RNG, so the global torch
    RNG is left untouched; the state's key is ``keys.make_key(seed)``. Concurrent calls take
    turns; other threads should not draw from the global torch RNG meanwhile.
    """
    static = static_for(config)
    if config.precision == "bf16":
        _warn_if_slow_bf16(config.device)
    dev, dt = torch.device(config.device), config.dtype
    with _INIT_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        with torch.device("cpu"):
            actor, critics = _build(config, config.num_critics)
            encoder = _build_encoder(config)
            algorithm = algorithm_of(config)
            extra = (algorithm.init_extra(config, algorithm.extra_modules(config))
                     if algorithm.init_extra else {})
    actor_params = cast_params(module_params(actor), dev, dt)
    critic_params = cast_params(stack_params(critics), dev, dt)
    encoder_params = {} if encoder is None else cast_params(module_params(encoder), dev, dt)
    scalar = lambda v: torch.tensor(v, dtype=dt, device=dev)  # noqa: E731
    log_alpha = scalar(math.log(config.init_alpha))
    return SACState(
        actor=actor_params,
        critic=critic_params,
        target_critic=({k: v.clone() for k, v in critic_params.items()}
                       if algorithm_of(config).target_networks else {}),
        actor_opt=adam_init(trainable(actor_params, static.actor_trainable)),
        critic_opt=adam_init(critic_and_encoder(
            trainable(critic_params, static.critic_trainable),
            trainable(encoder_params, static.encoder_trainable))),
        alpha_opt=adam_init({"log_alpha": log_alpha}),
        log_alpha=log_alpha,
        key=keys.make_key(seed, dev),
        step=torch.zeros((), dtype=torch.int64, device=dev),
        hparams=HParams(*(scalar(getattr(config, f)) for f in HParams._fields)),
        norm={**({"obs": init_stats(config.obs_shape, dev)} if config.normalize_obs else {}),
              **({"return": init_stats((), dev)} if config.scale_rewards else {}),
              **({"return_max": torch.zeros((), dtype=torch.float64, device=dev)}
                 if config.return_bound is not None else {})},
        encoder=encoder_params,
        target_encoder={k: v.clone() for k, v in encoder_params.items()},
        extra=optree.tree_map(lambda x: x.to(dev, dt if x.is_floating_point() else x.dtype),
                              extra, namespace=NAMESPACE),
        static=static,
    )


def _check_params(name: str, params: Params, template: nn.Module, lead: tuple) -> None:
    shapes = param_shapes(template)
    if params.keys() == shapes.keys() and all(
            tuple(v.shape) == lead + shapes[k] for k, v in params.items()):
        return
    expected = {k: lead + s for k, s in shapes.items()}
    got = {k: tuple(v.shape) for k, v in params.items()}
    wrong = sorted(set(got) ^ set(expected)) + [k for k in expected if k in got
                                                   and got[k] != expected[k]]
    raise ValueError(f"SACState.{name} does not match its config at {wrong}: expected "
                     f"parameter shapes {expected}, got {got}")


def check_state(state: SACState) -> None:
    """Raise ``ValueError`` if the state's parameters do not have the shapes its config implies,
    or its key, step or temperature is on another device (metadata only, so it is free under
    ``torch.compile``)."""
    if not isinstance(state, SACState):
        raise ValueError(f"expected a funcsac.SACState, got {type(state).__name__}")
    device = torch.device(state.config.device)
    for name in ("key", "step", "log_alpha"):
        x = getattr(state, name)
        if x.device.type != device.type:
            raise ValueError(f"SACState.{name} is on device {x.device}, its config says {device}")
    n = (state.config.num_critics,)
    _check_params("actor", state.actor, state.static.actor, ())
    _check_params("critic", state.critic, state.static.critic, n)
    if state.static.encoder is not None:
        _check_params("encoder", state.encoder, state.static.encoder, ())
        _check_params("target_encoder", state.target_encoder, state.static.encoder, ())
    elif state.encoder or state.target_encoder:
        raise ValueError("SACState.encoder and target_encoder must be empty: the config has "
                         "vector observations (image_shape is empty)")
    if algorithm_of(state.config).target_networks:
        _check_params("target_critic", state.target_critic, state.static.critic, n)
    elif state.target_critic:
        raise ValueError(f"SACState.target_critic must be empty: algorithm "
                         f"{state.config.algorithm!r} has no target networks")
