"""Named variants of SAC as settings of the same pieces (SACConfig fields and the variants'
options, plus the driver's ``utd``: gradient steps per environment step, ``offline_ratio``: the
offline share of each batch when offline data is given, ``reset_every`` and ``reset_at``: the
environment steps of resets, and its pixel and replay settings), as each reference runs it,
registered by each variant's folder (``funcsac.registry.register_preset``); where a reference
sets a value per task, ``PER_TASK`` holds its table (``preset(name, env_id)``)."""
from __future__ import annotations

from typing import Dict, Optional

from .. import registry

# the registered presets (each variant's folder registers its own: funcsac/variants/*/presets.py)
PRESETS, PER_TASK = registry.PRESETS, registry.PER_TASK
NEEDS_OFFLINE_DATA = registry.NEEDS_OFFLINE_DATA


def task_of(env_id: str) -> str:
    """The task an environment id names, without its namespace and version:
    ``"Hopper-v5"`` -> ``"Hopper"``."""
    name = env_id.rsplit("/", 1)[-1]
    stem, dash, version = name.rpartition("-v")
    return stem if dash and version.isdigit() else name


def preset(name: str, env_id: Optional[str] = None) -> dict:
    """The settings of a named variant (a new dict), with its per-task values for ``env_id``'s
    task (``PER_TASK``; without ``env_id``, the values for any other task); ``ValueError`` for an
    unknown name."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
    task = task_of(env_id) if env_id else None
    chosen = {setting: values.get(task, default)
              for setting, (values, default, _) in PER_TASK.get(name, {}).items()}
    return {**PRESETS[name], **{k: v for k, v in chosen.items() if v is not None}}


def per_task_choices(name: str, env_id: str) -> Dict[str, str]:
    """What ``preset(name, env_id)`` chose per task: a line by setting, with its source."""
    task, lines = task_of(env_id), {}
    for setting, (values, default, source) in PER_TASK.get(name, {}).items():
        value = values.get(task, default)
        which = f"for {task}" if task in values else "on a task it lists no value for"
        lines[setting] = (f"preset {name} on {env_id}: {setting} = "
                          f"{'none' if value is None else value} ({which}; {source})")
    return lines
