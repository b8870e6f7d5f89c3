"""Network templates and their pure apply functions.

Modules are templates kept on the ``meta`` device; their weights live in parameter dicts that are
passed to ``torch.func.functional_call``. The critic ensemble is N independently initialised
modules stacked along a leading axis and evaluated in one ``torch.func.vmap``.

A parameter dict also holds the module's buffers (a BatchNorm's running statistics). They are
read-only: every forward pass runs on copies of them, so a module that updates a buffer in place
in training mode leaves the caller's tensors unchanged (a BatchNorm normalises with the statistics
of its batch and its running statistics stay as initialised).

Threads: ``functional_call`` swaps the given tensors into the module it runs for the length of the
call, so eager calls run each thread's own copy of a template (``thread_template``, the main
thread's too) and the shared templates of ``Static`` are only ever read. Guaranteed: eager
``update``, ``update_many``, ``act``, the losses and the apply functions called from several threads
at once give the results of sequential calls. Compiled functions use the shared templates, whose
tensors their guards check on every call; eager calls never swap into them, so a compiled function
that has been called once runs in several threads, beside eager calls, without recompiling. Not
guaranteed: compiling (a first call or a recompile) in several threads at once, which torch.compile
itself does not promise, and CUDA graphs (``mode="reduce-overhead"``) from several threads. A change
made to a shared template after a thread copied it (such as ``.eval()``) does not reach the copy.

Precision: a template's matrix products take the dtype ``funcsac.precision`` marked it with.

A Linear layer's product is taken as ``funcsac.accel.product_order.linear_of`` says: ``x @ W^T``,
or in a wide critic ensemble on a CPU ``(W @ x^T)^T``, the same values up to rounding.
"""
from __future__ import annotations

import copy
import threading
import weakref
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.func import functional_call, stack_module_state

from . import keys
from .batch_renorm import BatchNorm, BatchRenorm, batch_renorm
from .accel.product_order import linear_of
from .layers import KeyedDropout, Residual
from .precision import product, products_dtype

Params = Dict[str, torch.Tensor]


def dropout_key_names(template: nn.Module) -> tuple:
    """Names of the ``key`` buffers of the template's ``KeyedDropout`` layers (remembered per
    template)."""
    return _fact(template, _dropout_key_names)


def _dropout_key_names(module: nn.Module) -> tuple:
    return tuple(f"{name}.key" for name, m in module.named_modules() if isinstance(m, KeyedDropout))


def map_critics(one, template: nn.Module, params: Params, key: Optional[torch.Tensor]):
    """``one(p, k)`` for each critic of the stacked ``params [N, ...]``, vmapped over them: ``k``
    is the critic's own key for its dropout masks, split from ``key``, or ``None`` when there is
    no key or the template has no dropout layer (no key is split that nothing would use)."""
    if key is None or not dropout_key_names(template):
        return torch.func.vmap(lambda p: one(p, None))(params)
    n = next(iter(params.values())).shape[0]
    return torch.func.vmap(one)(params, keys.split(key, n))


def with_dropout_keys(params: Params, names: tuple, key: Optional[torch.Tensor]) -> Params:
    """``params`` plus one key per dropout layer drawn from ``key`` (unchanged if ``key`` is
    None)."""
    if key is None or not names:
        return params
    return {**params, **dict(zip(names, keys.split(key, len(names))))}


def decay_mask(module: nn.Module, weight_decay_on: str) -> Dict[str, bool]:
    """The module's trainable parameter names (``requires_grad``), each mapped to whether weight
    decay applies to it: with ``"weights"`` to parameters of >= 2 dims (not biases nor
    normalisation scales), with ``"all"`` to every one."""
    return {name: weight_decay_on == "all" or p.dim() >= 2
            for name, p in module.named_parameters() if p.requires_grad}


def module_params(module: nn.Module) -> Params:
    """Detached parameters and buffers of ``module`` by name."""
    named = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    return {k: v.detach() for k, v in named.items()}


def stack_params(modules) -> Params:
    """Parameters and buffers of N same-shaped modules stacked along a new leading axis ``[N]``."""
    params, buffers = stack_module_state(list(modules))
    return {k: v.detach() for k, v in {**params, **buffers}.items()}


def cast_params(params: Params, device, dtype) -> Params:
    """``params`` moved to ``device``, floating tensors converted to ``dtype``."""
    return {k: v.to(device=device, dtype=dtype if v.is_floating_point() else v.dtype)
            for k, v in params.items()}


_THREAD = threading.local()  # each thread's copies of the templates


def thread_template(template: nn.Module) -> nn.Module:
    """This thread's own copy of ``template`` (made on first use; ``template`` itself while
    compiling), for ``functional_call`` to swap tensors into without racing other threads. The
    copy is made outside any fake-tensor mode (a first use may come while an output's structure
    is found with fake tensors), so its weightless tensors stay on the ``meta`` device."""
    if torch.compiler.is_compiling():
        return template
    copies = getattr(_THREAD, "copies", None)
    if copies is None:
        copies = _THREAD.copies = weakref.WeakKeyDictionary()
    own = copies.get(template)
    if own is None:
        with unset_fake_temporarily():
            own = copies[template] = copy.deepcopy(template)
    return own


# layers ``_run_plain`` applies itself; any other layer without parameters or buffers (ReLU,
# Tanh, ...) is simply called
_PLAIN_LAYERS = (nn.Linear, nn.Conv2d, nn.LayerNorm, nn.RMSNorm, KeyedDropout, BatchRenorm,
                 BatchNorm)
_FACTS: "weakref.WeakKeyDictionary[nn.Module, dict]" = weakref.WeakKeyDictionary()


def _plain_structure(template: nn.Module) -> bool:
    """Whether ``template`` is an ``nn.Sequential`` of Linear, Conv2d (zero padding), LayerNorm,
    RMSNorm, KeyedDropout, BatchRenorm and BatchNorm layers, of layers without parameters,
    buffers or children, and of ``Residual`` blocks of such layers, none with hooks."""
    def hooked(m: nn.Module) -> bool:
        return bool(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks)

    def plain(m: nn.Module) -> bool:
        if type(m) is Residual:
            return not hooked(m) and all(map(plain, m))
        stateless = (next(iter(m.parameters()), None) is None
                     and next(iter(m.buffers()), None) is None and not list(m.children()))
        zero_padded = type(m) is not nn.Conv2d or m.padding_mode == "zeros"
        return not hooked(m) and (type(m) in _PLAIN_LAYERS and zero_padded or stateless)

    return type(template) is nn.Sequential and not hooked(template) and all(map(plain, template))


def param_shapes(template: nn.Module) -> Dict[str, tuple]:
    """The shapes of the template's parameters and buffers by name (remembered per template)."""
    return _fact(template, _param_shapes)


def _param_shapes(template: nn.Module) -> Dict[str, tuple]:
    return {k: tuple(v.shape) for k, v in
            {**dict(template.named_parameters()), **dict(template.named_buffers())}.items()}


def _has_batch_renorm(template: nn.Module) -> bool:
    """Whether ``template`` holds a ``BatchRenorm`` or ``BatchNorm`` layer."""
    return any(isinstance(m, (BatchRenorm, BatchNorm)) for m in template.modules())


def _fact(template: nn.Module, of):
    """``of(template)`` for a structural question about a template, remembered per template
    outside compiled code (a template is never changed after it is built)."""
    if torch.compiler.is_compiling():
        return of(template)
    facts = _FACTS.setdefault(template, {})
    if of not in facts:
        facts[of] = of(template)
    return facts[of]


def _is_plain(template: nn.Module) -> bool:
    """``_plain_structure``, remembered per template outside compiled code."""
    return _fact(template, _plain_structure)


def _run_plain(template: nn.Sequential, params: Params, x: torch.Tensor,
               stats: Optional[Params] = None, prefix: str = "",
               products: Optional[torch.dtype] = None) -> torch.Tensor:
    """What ``functional_call(template, params, (x,))`` computes for a plain ``Sequential``: the
    same operations, with no tensor swapped into the module. With a ``stats`` dict, BatchRenorm
    and BatchNorm layers run in training mode and put their new running statistics in it, which
    ``functional_call`` cannot return (CrossQ's joint pass needs them); ``prefix`` is the name of
    ``template`` in ``params`` (a ``Residual`` block's, with a dot); ``products`` the dtype of the
    Linear and Conv2d layers' operands (``None``: as they are)."""
    for name, layer in template.named_children():
        kind, at = type(layer), f"{prefix}{name}."
        if kind is nn.Linear:
            x = product(products, linear_of(layer), x, params[f"{at}weight"],
                         params.get(f"{at}bias"))
        elif kind is nn.Conv2d:
            x = product(products, F.conv2d, x, params[f"{at}weight"], params.get(f"{at}bias"),
                         layer.stride, layer.padding, layer.dilation, layer.groups)
        elif kind is nn.LayerNorm:
            x = F.layer_norm(x, layer.normalized_shape, params.get(f"{at}weight"),
                             params.get(f"{at}bias"), layer.eps)
        elif kind is nn.RMSNorm:
            x = F.rms_norm(x, layer.normalized_shape, params.get(f"{at}weight"), layer.eps)
        elif kind is KeyedDropout:
            x = layer.drop(x, params.get(f"{at}key"))
        elif kind is BatchRenorm or kind is BatchNorm:
            x, new = batch_renorm(layer, params, at, x, train=stats is not None)
            if new is not None:
                stats.update(new)
        elif kind is Residual:
            x = x + _run_plain(layer, params, x, stats, at, products)
        else:
            x = layer(x)
    return x


def apply_network(template: nn.Module, params: Params, x: torch.Tensor,
                  stats: Optional[Params] = None) -> torch.Tensor:
    """``template`` applied to ``x`` with ``params``, the one place the way is chosen: directly
    for a plain ``Sequential`` (``_run_plain``), else by ``functional_call`` on this thread's
    copy, buffers copied first; its products in the dtype ``set_products_dtype`` gave it.
    ``stats``: see ``_run_plain`` (ignored by a template without BatchRenorm layers)."""
    products = products_dtype(template)
    if _is_plain(template):
        return _run_plain(template, params, x, stats, products=products)
    if stats is not None and _fact(template, _has_batch_renorm):
        raise ValueError("training-mode batch statistics need a network that is an "
                         "nn.Sequential of Linear, LayerNorm, RMSNorm, KeyedDropout, BatchRenorm, "
                         "BatchNorm and "
                         f"parameter-free layers, got {type(template).__name__}")
    module = thread_template(template)
    copies = {n: params[n].clone() for n, _ in module.named_buffers() if n in params}
    if products is None:
        return functional_call(module, {**params, **copies}, (x,))
    with torch.autocast(x.device.type, dtype=products):
        out = functional_call(module, {**params, **copies}, (x,))
    return out.to(x.dtype)


def apply_actor(template: nn.Module, params: Params, obs: torch.Tensor,
                log_std_min: float, log_std_max: float, stats: Optional[Params] = None,
                squash: str = "tanh") -> Tuple[torch.Tensor, torch.Tensor]:
    """Policy head: ``obs [B, obs_dim] -> (mean [B, act], log_std [B, act])``.

    The raw log-std is bounded to ``[log_std_min, log_std_max]``: squashed smoothly with a tanh
    (``squash="tanh"``), or clipped (``"clip"``: no gradient outside the bounds). With a
    ``stats`` dict, BatchRenorm layers normalise with the batch's statistics and put their new
    running statistics in it.
    """
    out = apply_network(template, params, obs, stats)
    mean, raw = out.chunk(2, dim=-1)
    if squash == "clip":
        return mean, raw.clamp(log_std_min, log_std_max)
    log_std = log_std_min + 0.5 * (log_std_max - log_std_min) * (torch.tanh(raw) + 1.0)
    return mean, log_std


def apply_encoder(template: nn.Module, params: Params, obs) -> torch.Tensor:
    """The image encoder: ``images [B, C, H, W]`` (scaled floats,
    ``funcsac.encoders.prepare_images``) -> features ``[B, obs_dim]``; a dict observation's
    ``"pixels"`` -> its features followed by its ``"state" [B, state_dim]``,
    ``[B, obs_dim + state_dim]``."""
    if isinstance(obs, dict):
        return torch.cat([apply_network(template, params, obs["pixels"]), obs["state"]], -1)
    return apply_network(template, params, obs)


def apply_critic(template: nn.Module, params: Params, obs: torch.Tensor, action: torch.Tensor,
                 key: Optional[torch.Tensor] = None,
                 stats: Optional[Params] = None) -> torch.Tensor:
    """One critic: ``(obs [B, obs_dim], action [B, act]) -> Q [B]``; ``key`` draws the dropout
    masks (None: no dropout); with a ``stats`` dict, BatchRenorm layers normalise with the
    batch's statistics and put their new running statistics in it."""
    params = with_dropout_keys(params, dropout_key_names(template), key)
    return apply_network(template, params, torch.cat([obs, action], dim=-1), stats).squeeze(-1)


def apply_critics(template: nn.Module, params: Params, obs: torch.Tensor, action: torch.Tensor,
                  key: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The ensemble: stacked params ``[N, ...]`` -> ``Q [N, B]`` for one shared batch, evaluated
    with ``vmap``; with a ``key`` each critic draws its own dropout masks."""
    return map_critics(lambda p, k: apply_critic(template, p, obs, action, k), template, params,
                       key)


def apply_critics_training(template: nn.Module, params: Params, obs: torch.Tensor,
                           action: torch.Tensor, key: torch.Tensor) -> Tuple[torch.Tensor, Params]:
    """The ensemble in training mode: ``(Q [N, B], new running statistics [N, ...])``, each
    critic's BatchRenorm layers normalising with the batch's statistics (CrossQ); ``key`` draws
    the dropout masks."""
    def one(p, k):
        stats = {}
        q = apply_critic(template, p, obs, action, k, stats)
        return q, {name: s.detach() for name, s in stats.items()}

    return map_critics(one, template, params, key)
