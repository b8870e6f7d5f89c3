"""Fingerprints of Python functions: a hash of what decides what a function computes, equal in
every process that runs the same code, and different when that code changes.

``fingerprint(obj)`` hashes ``describe(obj)``, a text built recursively:

- a function: its module and qualified name, defaults and closure cells (``make_update(Losses(
  ...))`` and ``torch.func.vmap(fn)`` close over the functions they run). One defined outside
  funcsac and the libraries whose versions a compiled function is stored under (torch, numpy,
  optree, the standard library: ``VERSIONED``) is also described by its code (bytecode, constants
  and nested code, names, arguments; not its file or line numbers) and by the globals its code
  names: functions and classes recursively, a module by name (and, for a module of neither
  funcsac nor ``VERSIONED``, its attributes that the code names), values as below;
- a class: its module and qualified name; one defined outside these packages also by the
  attributes (methods by their code) of each class in its MRO outside them;
- a bound method by its function and ``self``; ``functools.partial`` by function, arguments and
  keywords; a built-in function or method descriptor by name (and ``self``, when bound to an
  object);
- plain values by value: ``None``, bools, numbers, strings, bytes, torch dtypes and devices,
  tensors (dtype, shape, device and contents), and tuples, lists, sets and dicts of those;
- any other object by its class and its attributes (``vars``): a dataclass, an ``nn.Module``.

An object met twice (a recursive function, a cycle of references) is described once, then
referred to by its position. Anything else, such as an object without attributes of its own (a
lock, a generator), has no description that holds across processes: ``describe`` raises
``Unfingerprintable`` naming it and the functions it was reached from.
"""
from __future__ import annotations

import functools
import hashlib
import sys
import types

import torch

OWN_PACKAGE = "funcsac"
VERSIONED = frozenset({"torch", "numpy", "optree"}) | sys.stdlib_module_names
PLAIN = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), torch.dtype,
         torch.device)
CONTAINERS = (tuple, list, set, frozenset, dict)
# what Python derives from the rest of a class (fields, annotations, slots, ABC caches)
DERIVED = frozenset({"__dict__", "__weakref__", "__annotations__", "__dataclass_fields__",
                     "__dataclass_params__", "__orig_bases__", "__parameters__", "_abc_impl",
                     "__firstlineno__", "__static_attributes__"})


class Unfingerprintable(TypeError):
    """An object without a description that is the same in every process."""

    def __init__(self, what: str, why: str):
        super().__init__(what, why)
        self.what, self.why, self.path = what, why, []

    def __str__(self):
        where = f" (reached through {' <- '.join(self.path)})" if self.path else ""
        return f"{self.what}{where} {self.why}"


def fingerprint(obj) -> str:
    """The SHA-256 (hex) of ``describe(obj)``."""
    return hashlib.sha256(describe(obj).encode()).hexdigest()


def describe(obj) -> str:
    """A text equal for objects that compute the same in any process running the same code and
    library versions (see the module's docstring); raises ``Unfingerprintable``."""
    return _describe(obj, {})


def is_covered(module: str) -> bool:
    """Whether code of ``module`` is covered without reading it: funcsac's (by its source) or a
    ``VERSIONED`` library's (by its version)."""
    root = (module or "").partition(".")[0]
    return root == OWN_PACKAGE or root in VERSIONED


def _describe(obj, seen: dict) -> str:
    """``describe(obj)``; ``seen`` maps the id of each object described so far to its position
    and the object (kept alive, so that no other object takes its id meanwhile)."""
    if isinstance(obj, PLAIN):
        return f"{_name(type(obj))} {obj!r}"
    if id(obj) in seen:
        return f"seen {seen[id(obj)][0]}"
    seen[id(obj)] = (len(seen), obj)
    for kind, describer in _DESCRIBERS:
        if isinstance(obj, kind):
            return describer(obj, seen)
    return _describe_object(obj, seen)


def _name(obj) -> str:
    return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', None)}"


def _describe_items(kind: str, items, seen: dict) -> str:
    return f"{kind}[" + ", ".join(_describe(x, seen) for x in items) + "]"


def _describe_container(obj, seen: dict) -> str:
    kind = _name(type(obj))
    if isinstance(obj, dict):
        return _describe_items(kind, (tuple(item) for item in obj.items()), seen)
    if isinstance(obj, (set, frozenset)):  # in an order that does not depend on hashing
        return f"{kind}[" + ", ".join(sorted(_describe(x, seen) for x in obj)) + "]"
    return _describe_items(kind, obj, seen)


def _describe_code(code: types.CodeType, seen: dict) -> str:
    fields = (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
              code.co_code.hex(), code.co_exceptiontable.hex(), code.co_names,
              code.co_varnames, code.co_freevars, code.co_cellvars)
    return f"code {fields!r} consts {_describe(code.co_consts, seen)}"


def _referenced_names(code: types.CodeType) -> set:
    """The global and attribute names that ``code`` and the code nested in it look up."""
    nested = (c for c in code.co_consts if isinstance(c, types.CodeType))
    return set(code.co_names).union(*map(_referenced_names, nested))


def _describe_globals(fn: types.FunctionType, seen: dict) -> str:
    """The globals ``fn``'s code names; of a module outside funcsac and ``VERSIONED``, also the
    attributes it names."""
    names = sorted(_referenced_names(fn.__code__))
    lines = []
    for name in (n for n in names if n in fn.__globals__):
        value = fn.__globals__[name]
        lines.append(f"global {name} = {_describe(value, seen)}")
        if isinstance(value, types.ModuleType) and not is_covered(value.__name__):
            lines += [f"global {name}.{a} = {_describe(getattr(value, a), seen)}"
                      for a in names if hasattr(value, a)]
    return "\n".join(lines)


def _describe_cell(cell, seen: dict) -> str:
    try:
        return "cell " + _describe(cell.cell_contents, seen)
    except ValueError:  # a cell not yet filled
        return "empty cell"


def _describe_function(fn: types.FunctionType, seen: dict) -> str:
    # the module that defined it, which decorators (functools.wraps) cannot rename
    module = fn.__globals__.get("__name__")
    label = f"{module}.{fn.__code__.co_qualname}"
    try:
        parts = [f"function {label}", _describe(fn.__defaults__, seen),
                 _describe(fn.__kwdefaults__, seen),
                 *(_describe_cell(c, seen) for c in fn.__closure__ or ())]
        if not is_covered(module):
            parts += [_describe(fn.__code__, seen), _describe_globals(fn, seen)]
    except Unfingerprintable as e:
        e.path.append(label)
        raise
    return "\n".join(parts)


def _describe_class(cls: type, seen: dict) -> str:
    own = [k for k in cls.__mro__ if not is_covered(k.__module__)]
    attributes = (f"{k.__qualname__}.{name} = {_describe(value, seen)}" for k in own
                  for name, value in sorted(vars(k).items())
                  if name not in DERIVED and not isinstance(value, (
                      types.GetSetDescriptorType, types.MemberDescriptorType)))
    return "\n".join([f"class {_name(cls)}", *attributes])


def _describe_builtin(fn: types.BuiltinFunctionType, seen: dict) -> str:
    owner = fn.__self__
    bound = "" if owner is None or isinstance(owner, (types.ModuleType, type)) else \
        " of " + _describe(owner, seen)
    return f"builtin {_name(fn)}{bound}"


def _describe_tensor(x: torch.Tensor, seen: dict) -> str:
    head = f"tensor {x.dtype} {tuple(x.shape)} {x.device.type} {x.requires_grad}"
    if x.is_meta:
        return head
    try:
        data = x.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    except (RuntimeError, TypeError) as e:
        raise Unfingerprintable(f"tensor {head}", f"cannot be read as bytes ({e})") from e
    return f"{head} {hashlib.sha256(data).hexdigest()}"


def _describe_object(obj, seen: dict) -> str:
    try:
        attributes = sorted(vars(obj).items())
    except TypeError:
        text = repr(obj)
        raise Unfingerprintable(
            f"{_name(type(obj))} object {text[:60]}{'...' if len(text) > 60 else ''}",
            "has no attributes to describe it by, so no description that holds across "
            "processes") from None
    return "\n".join([f"object of {_describe(type(obj), seen)}",
                      *(f".{name} = {_describe(value, seen)}" for name, value in attributes)])


_DESCRIBERS = (
    (CONTAINERS, _describe_container),
    (types.ModuleType, lambda m, seen: f"module {m.__name__}"),
    (types.FunctionType, _describe_function),
    (types.CodeType, _describe_code),
    (types.MethodType, lambda m, seen: "method " + _describe((m.__func__, m.__self__), seen)),
    (types.BuiltinFunctionType, _describe_builtin),
    (functools.partial,
     lambda p, seen: "partial " + _describe((p.func, p.args, p.keywords), seen)),
    ((staticmethod, classmethod), lambda m, seen: "wrapped " + _describe(m.__func__, seen)),
    (property, lambda p, seen: "property " + _describe((p.fget, p.fset, p.fdel), seen)),
    ((types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType),
     lambda d, seen: f"descriptor {_name(d.__objclass__)}.{d.__name__}"),
    (type, _describe_class),
    (torch.Tensor, _describe_tensor),
)
