"""Network factories named in a run's settings (``--actor-factory my_nets.py:actor``): imported
where the run, its compile child, ``load`` and ``export`` build the agent."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Callable

FACTORY_FIELDS = ("actor_factory", "critic_factory", "encoder_factory")


def check_factory_name(name: str, field: str) -> None:
    """``ValueError`` unless ``name`` is ``""`` or of the form ``MODULE:FUNCTION`` or
    ``FILE.py:FUNCTION`` (no import)."""
    module, _, function = name.rpartition(":") if isinstance(name, str) else (None, "", "")
    if not isinstance(name, str) or (name and not (module and function.isidentifier())):
        raise ValueError(f"TrainConfig.{field} must be '' (the default networks) or "
                         f"'MODULE:FUNCTION' or 'FILE.py:FUNCTION' (such as "
                         f"'my_nets.py:make_{field.split('_')[0]}'), got {name!r}")


def absolute_factory_name(name):
    """``name`` with a relative ``FILE.py`` made absolute from the working directory (so that a
    resumed run, a Tune trial or ``load`` elsewhere finds it); anything else as it is."""
    if not isinstance(name, str) or not name.rpartition(":")[0].endswith(".py"):
        return name
    path, _, function = name.rpartition(":")
    return f"{Path(path).expanduser().absolute()}:{function}"


def import_factory(name: str, field: str) -> Callable:
    """The function that ``name`` (``MODULE:FUNCTION``, or ``FILE.py:FUNCTION`` with the file's
    path absolute or relative to the working directory) names. A file is imported as the module
    of its stem, its folder first on ``sys.path``, so that a child process imports the same."""
    check_factory_name(name, field)
    module_name, _, function = name.rpartition(":")
    if module_name.endswith(".py"):
        path = Path(module_name).resolve()
        if not path.is_file():
            raise ValueError(f"TrainConfig.{field}: no file {path} (from {name!r}; a relative "
                             f"path is taken from the working directory, {Path.cwd()})")
        module_name = path.stem
        loaded = sys.modules.get(module_name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != path:
            raise ValueError(f"TrainConfig.{field}: a module named {module_name!r} is already "
                             f"imported from {getattr(loaded, '__file__', None)}, not {path}; "
                             "rename the file")
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"TrainConfig.{field}: cannot import {module_name!r} (from {name!r}): "
                         f"{e}") from e
    factory = getattr(module, function, None)
    if not callable(factory):
        raise ValueError(f"TrainConfig.{field}: {module_name} has no function {function!r} "
                         f"(from {name!r})")
    return factory
