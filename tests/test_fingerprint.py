"""Fingerprints of functions: equal for the same code in any process, different when anything the
function computes with changes (its code, constants, defaults, closure, the functions and values
it reaches), and refused for objects without a description that holds across processes."""
import functools
import os
import subprocess
import sys
import textwrap
import threading
import types

import pytest
import torch

import funcsac
from funcsac.driver.run.agents import vmap_agents
from funcsac.accel.compile.fingerprint import Unfingerprintable, describe, fingerprint


def _define(source: str, **globals_):
    """The object ``f`` that ``source`` defines in a new user module holding ``globals_``."""
    namespace = {"__name__": "user_module", **globals_}
    exec(textwrap.dedent(source), namespace)
    return namespace["f"]


def _scaled_by(factor):
    def scaled(x):
        return x * factor
    return scaled


def _scaled_critic_loss(*args):
    loss, out = funcsac.critic_loss(*args)
    return 3 * loss, out


def _countdown(n):
    return _countdown(n - 1) if n else 0


class _Shift(torch.nn.Module):
    def __init__(self, by):
        super().__init__()
        self.by = by

    def forward(self, x):
        return x + self.by


def _examples() -> list:
    """Objects of each kind described: funcsac's functions and closures over user code, user
    functions, recursion, partials, bound methods, callable objects, modules with weights."""
    torch.manual_seed(0)
    return [funcsac.update, vmap_agents(funcsac.make_update(funcsac.Losses(
        critic=_scaled_critic_loss)), 2), _scaled_by(2.5), _countdown,
        functools.partial(_scaled_by, 3), _Shift(1.0).forward, _Shift(torch.ones(3)),
        torch.nn.Linear(2, 3), _scaled_by({"a": (1, None), "b": frozenset({"x", "y", "z"})}),
        _scaled_by(torch.float64), lambda x: torch.relu(x) + len("abc")]


def test_the_same_code_has_the_same_fingerprint_in_another_process():
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_fingerprint import _examples
        from funcsac.accel.compile.fingerprint import fingerprint
        print(" ".join(fingerprint(x) for x in _examples()))
    """)
    env = {**os.environ, "PYTHONHASHSEED": "123"}  # other set orders than this process's
    there = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                           text=True, env=env).stdout.split()
    assert there == [fingerprint(x) for x in _examples()]
    assert len(set(there)) == len(there)


def test_a_changed_constant_default_closure_or_global_changes_the_fingerprint():
    helper = _define("def f(x):\n    return x + 1\n")
    source = "def f(x, y=2):\n    return helper(x) * {}\n"
    base = fingerprint(_define(source.format(2), helper=helper))
    assert fingerprint(_define(source.format(2), helper=_define("def f(x): return x + 1"))) == base
    assert fingerprint(_define(source.format(3), helper=helper)) != base  # a constant
    assert fingerprint(_define(source.replace("y=2", "y=3").format(2), helper=helper)) != base
    assert fingerprint(_define(source.format(2), helper=_define("def f(x): return x - 1"))) != base
    assert fingerprint(_define(source.format(2), helper=functools.partial(helper))) != base
    assert fingerprint(_scaled_by(2)) == fingerprint(_scaled_by(2)) != fingerprint(_scaled_by(3))
    assert fingerprint(_scaled_by(torch.zeros(2))) != fingerprint(_scaled_by(torch.ones(2)))
    # a user module's attributes that the code names
    lib = types.ModuleType("user_lib")
    lib.helper = helper
    uses_lib = "def f(x):\n    return user_lib.helper(x)\n"
    before = fingerprint(_define(uses_lib, user_lib=lib))
    lib.helper = _define("def f(x): return x - 1")
    assert fingerprint(_define(uses_lib, user_lib=lib)) != before


def test_classes_and_callable_objects_are_described_by_their_methods_code():
    module = "class f(torch.nn.Module):\n    def forward(self, x):\n        return x * {}\n"
    assert fingerprint(_define(module.format(2), torch=torch)) == fingerprint(
        _define(module.format(2), torch=torch))
    assert fingerprint(_define(module.format(2), torch=torch)) != fingerprint(
        _define(module.format(3), torch=torch))
    assert fingerprint(_define(module.format(2), torch=torch)()) != fingerprint(
        _define(module.format(3), torch=torch)())
    assert fingerprint(_Shift(1.0)) != fingerprint(_Shift(2.0))
    assert fingerprint(_Shift(1.0).forward) != fingerprint(_Shift(2.0).forward)


def test_funcsac_functions_are_named_and_what_they_close_over_described():
    assert fingerprint(funcsac.make_update()) == fingerprint(funcsac.update)
    assert fingerprint(funcsac.update_with_aux) != fingerprint(funcsac.update)
    custom = funcsac.make_update(funcsac.Losses(critic=_scaled_critic_loss))
    assert fingerprint(custom) != fingerprint(funcsac.update)
    assert fingerprint(vmap_agents(custom, 2)) != fingerprint(vmap_agents(funcsac.update, 2))
    assert "code" not in describe(funcsac.update)
    # a wrapper that copies funcsac's names is still described by its own code
    wrapped = functools.wraps(funcsac.update)(lambda state, batch: funcsac.update(state, batch))
    assert "code" in describe(wrapped) and fingerprint(wrapped) != fingerprint(funcsac.update)


def test_a_function_reaching_an_object_without_a_stable_description_is_refused():
    lock = threading.Lock()
    uses_lock = _define("def f(x):\n    with lock:\n        return x\n", lock=lock)
    caller = _define("def f(x):\n    return g(x)\n", g=uses_lock)
    with pytest.raises(Unfingerprintable, match=r"_thread.lock object .*\(reached through "
                       r"user_module.f <- user_module.f\) has no attributes"):
        fingerprint(caller)
    with pytest.raises(Unfingerprintable, match="generator"):
        fingerprint(_scaled_by(x for x in range(3)))
