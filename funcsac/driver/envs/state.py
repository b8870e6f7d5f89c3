"""Environment state as plain data (tensors, numbers, strings), so that a checkpoint holds no
pickled object and a resumed sub-environment continues exactly where it stopped.

A sub-environment is saved layer by layer, from the outermost wrapper to the base env. A layer is
saveable when its class is registered (``register_env_state``); the built-in registrations cover
gymnasium's classic-control envs, every MuJoCo env (the whole ``MjData``: the full integration
state and the derived quantities an env may read before its next step), DeepMind Control's
through shimmy (the physics, the model's arrays, the task's random state) and the wrappers that
``gymnasium.make`` adds, plus the normalising wrappers. Every base env's ``np_random`` is saved
with it. A sub-environment with any unregistered layer is not saveable: on resume it starts a
fresh episode, with a warning.
"""
from __future__ import annotations

import collections
import dataclasses
import sys
from typing import Callable, Dict, List, Optional

import gymnasium as gym
import numpy as np
import torch
from gymnasium.wrappers.utils import RunningMeanStd

from .dmc import FoldedSeed

EnvData = Dict[str, object]


class EnvStateError(ValueError):
    """Saved environment state that does not fit the environment it is restored into."""


@dataclasses.dataclass(frozen=True)
class StateCodec:
    """How to save one layer's state as plain data and put it back."""

    save: Callable[[object], EnvData]
    load: Callable[[object, EnvData], None]


_CODECS: Dict[type, StateCodec] = {}


def register_env_state(cls: type, save: Callable[[object], EnvData],
                       load: Callable[[object, EnvData], None]) -> None:
    """Make env or wrapper class ``cls`` (and its subclasses) resumable exactly: ``save(layer)``
    returns its state as a dict of plain values (numpy arrays, numbers, strings, None, nested
    dicts/lists of them), ``load(layer, data)`` puts such a dict back into a fresh instance."""
    _CODECS[cls] = StateCodec(save, load)


def _codec(layer) -> Optional[StateCodec]:
    _register_mujoco()
    _register_dmc()
    return next((_CODECS[c] for c in type(layer).__mro__ if c in _CODECS), None)


def _layers(env) -> list:
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    return layers


def _name(layer) -> str:
    return f"{type(layer).__module__}.{type(layer).__qualname__}"


# plain values <-> checkpoint values: arrays become tensors, tagged so they come back as arrays
def _encode(value):
    if isinstance(value, np.ndarray):
        return {"ndarray": torch.from_numpy(np.array(value, copy=True))}
    if isinstance(value, np.generic):
        return {"npscalar": torch.from_numpy(np.array(value))}
    if isinstance(value, dict):
        return {"dict": {k: _encode(v) for k, v in value.items()}}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return {"list": [_encode(v) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"cannot save a {type(value).__name__} as plain data")


def _decode(value):
    if not isinstance(value, dict) or len(value) != 1:
        raise EnvStateError(f"malformed saved environment value {type(value).__name__}")
    (tag, x), = value.items()
    if tag == "ndarray" and isinstance(x, torch.Tensor):
        return x.numpy().copy()
    if tag == "npscalar" and isinstance(x, torch.Tensor):
        return x.numpy()[()]
    if tag == "dict" and isinstance(x, dict):
        return {k: _decode(v) for k, v in x.items()}
    if tag == "list" and isinstance(x, list):
        return [_decode(v) for v in x]
    if tag == "tuple" and isinstance(x, list):
        return tuple(_decode(v) for v in x)
    if tag == "value" and (x is None or isinstance(x, (bool, int, float, str))):
        return x
    raise EnvStateError(f"malformed saved environment value tagged {tag!r}")


_PLAIN = (type(None), bool, int, float, str, np.ndarray, np.generic)
_SKIPPED = {"env", "_saved_kwargs", "_ezpickle_args", "_ezpickle_kwargs", "spec", "metadata",
            "_np_random"}


def _plain(value) -> bool:
    """Whether ``value`` is plain data: a number, string, array, or a tuple or list of them (as
    MountainCar's ``state``, a tuple of floats after its first step)."""
    return isinstance(value, _PLAIN) or (isinstance(value, (tuple, list))
                                         and all(_plain(v) for v in value))


def save_attributes(layer) -> EnvData:
    """The layer's instance attributes that are plain data (``_plain``, and running statistics);
    spaces, specs, renderers and the wrapped env are left out."""
    data = {}
    for k, v in vars(layer).items():
        if k in _SKIPPED:
            continue
        if isinstance(v, RunningMeanStd):
            data[k] = {"running_mean_std": [v.mean, v.var, v.count]}
        elif _plain(v):
            data[k] = v
    return data


def load_attributes(layer, data: EnvData) -> None:
    """Set attributes saved by ``save_attributes``."""
    for k, v in data.items():
        if isinstance(v, dict) and set(v) == {"running_mean_std"}:
            rms = RunningMeanStd()
            rms.mean, rms.var, rms.count = v["running_mean_std"]
            v = rms
        setattr(layer, k, v)


def arrays_of(struct, skip: tuple = ()) -> Dict[str, np.ndarray]:
    """Copies of every array field of a MuJoCo struct (``MjData``, ``MjModel``) but those whose
    names start with one of ``skip``."""
    return {a: getattr(struct, a).copy() for a in dir(struct)
            if not a.startswith(("_", *skip)) and isinstance(getattr(struct, a, None), np.ndarray)}


def save_mjdata(data) -> EnvData:
    """Every array of an ``MjData`` (the integration state: time, qpos, qvel, act, warm start,
    controls, ...; and the derived quantities, such as body positions, that some envs read
    before stepping) and its time."""
    return {"time": float(data.time), "mjdata": arrays_of(data)}


def load_mjdata(model, data, saved: EnvData) -> None:
    """Restore ``save_mjdata``'s arrays into ``data``. Arrays whose size depends on the number of
    contacts and constraints are outputs of the next step, and are skipped where the sizes
    differ."""
    import mujoco

    mujoco.mj_resetData(model, data)
    data.time = saved["time"]
    load_arrays(data, saved["mjdata"], "MjData")


def load_arrays(struct, arrays: Dict[str, np.ndarray], kind: str) -> None:
    """Copy ``arrays`` into the same-named fields of ``struct`` where the shapes agree."""
    for name, saved in arrays.items():
        target = getattr(struct, name, None)
        if target is None:
            raise EnvStateError(f"{kind} has no field {name!r}: saved by another MuJoCo version")
        if target.shape == saved.shape:
            target[...] = saved


def save_mujoco(env) -> EnvData:
    """A MuJoCo env: its plain attributes and its ``MjData`` (``save_mjdata``)."""
    return {"attributes": save_attributes(env), **save_mjdata(env.data)}


def load_mujoco(env, data: EnvData) -> None:
    """Restore ``save_mujoco``'s data."""
    load_attributes(env, data["attributes"])
    load_mjdata(env.model, env.data, data)


def save_frame_stack(layer) -> EnvData:
    """A ``FrameStackObservation``'s attributes and the frames it holds."""
    return {**save_attributes(layer), "obs_queue": list(layer.obs_queue)}


def load_frame_stack(layer, data: EnvData) -> None:
    frames = data.pop("obs_queue")
    load_attributes(layer, data)
    layer.obs_queue = collections.deque(frames, maxlen=layer.stack_size)


def _register_builtins() -> None:
    from gymnasium.envs import classic_control
    from gymnasium.wrappers import (AddRenderObservation, ClipAction, FrameStackObservation,
                                    NormalizeObservation, NormalizeReward, OrderEnforcing,
                                    PassiveEnvChecker, RescaleAction, TimeLimit,
                                    TransformObservation)

    from .make import ActionRepeat
    from .raw import RawObservationEnv

    # TransformObservation's function is taken to be pure (``--pixels``' are)
    plain = (classic_control.PendulumEnv, classic_control.Continuous_MountainCarEnv,
             classic_control.CartPoleEnv, classic_control.AcrobotEnv,
             classic_control.MountainCarEnv, TimeLimit, OrderEnforcing, PassiveEnvChecker,
             NormalizeObservation, NormalizeReward, ClipAction, RescaleAction,
             AddRenderObservation, TransformObservation, ActionRepeat, RawObservationEnv)
    for cls in plain:
        register_env_state(cls, save_attributes, load_attributes)
    register_env_state(FrameStackObservation, save_frame_stack, load_frame_stack)


def _register_mujoco() -> None:
    """MuJoCo envs' codec, once gymnasium's MuJoCo module is loaded (making a MuJoCo env loads
    it); funcsac never imports mujoco itself, so it imports and trains without it."""
    module = sys.modules.get("gymnasium.envs.mujoco.mujoco_env")
    if module is not None and module.MujocoEnv not in _CODECS:
        register_env_state(module.MujocoEnv, save_mujoco, load_mujoco)


def save_dmc(env) -> EnvData:
    """A shimmy DeepMind Control env: the control loop's step count, the task's random state and
    plain attributes, the physics' ``MjData`` and the ``MjModel`` arrays (tasks move targets in
    the model at each episode's start; not the textures and meshes, 11 MB of static assets)."""
    inner = env._env
    return {"step_count": inner._step_count, "reset_next_step": inner._reset_next_step,
            "random": list(inner.task.random.get_state()), "task": save_attributes(inner.task),
            "model": arrays_of(inner.physics.model.ptr, skip=("tex_", "mesh_")),
            **save_mjdata(inner.physics.data.ptr)}


def load_dmc(env, data: EnvData) -> None:
    """Restore ``save_dmc``'s data into a fresh env of the same task."""
    inner = env._env
    physics = inner.physics
    inner._step_count, inner._reset_next_step = data["step_count"], data["reset_next_step"]
    inner.task.random.set_state(tuple(data["random"]))
    load_attributes(inner.task, data["task"])
    load_arrays(physics.model.ptr, data["model"], "MjModel")
    load_mjdata(physics.model.ptr, physics.data.ptr, data)


def _register_dmc() -> None:
    """DeepMind Control envs' codec, once shimmy's wrapper is loaded (``envs.dmc`` loads it)."""
    module = sys.modules.get("shimmy.dm_control_compatibility")
    if module is not None and module.DmControlCompatibilityV0 not in _CODECS:
        register_env_state(module.DmControlCompatibilityV0, save_dmc, load_dmc)
        register_env_state(FoldedSeed, save_attributes, load_attributes)


_register_builtins()


def unsaveable_layer(env) -> Optional[str]:
    """The class name of the first layer of ``env`` that cannot be saved, or None."""
    return next((_name(layer) for layer in _layers(env) if _codec(layer) is None), None)


def save_env(env) -> Optional[dict]:
    """One sub-environment's state as checkpoint values, or None if it cannot be saved."""
    if unsaveable_layer(env) is not None:
        return None
    layers = _layers(env)
    rng = layers[-1]._np_random
    return {"layers": [{"class": _name(layer), "state": _encode(_codec(layer).save(layer))}
                       for layer in layers],
            "np_random": _encode(None if rng is None else rng.bit_generator.state)}


def load_env(env, saved: dict) -> None:
    """Put ``save_env``'s data back into a freshly made ``env`` of the same construction."""
    if not isinstance(saved, dict) or set(saved) != {"layers", "np_random"}:
        raise EnvStateError("saved environment state is not in funcsac's format")
    layers = _layers(env)
    names = [entry.get("class") if isinstance(entry, dict) else None for entry in saved["layers"]]
    if names != [_name(layer) for layer in layers]:
        raise EnvStateError(f"saved environment layers {names} do not match this environment's "
                            f"{[_name(layer) for layer in layers]}")
    for layer, entry in zip(layers, saved["layers"]):
        _codec(layer).load(layer, _decode(entry["state"]))
    rng_state = _decode(saved["np_random"])
    if rng_state is not None:
        generator = getattr(np.random, rng_state["bit_generator"])()
        generator.state = rng_state
        layers[-1]._np_random = np.random.Generator(generator)


def save_envs(envs) -> List[Optional[dict]]:
    """Each sub-environment's state (None where it cannot be saved: unregistered layers, or
    async envs, whose sub-environments live in other processes)."""
    if not isinstance(envs, gym.vector.SyncVectorEnv):
        return [None] * envs.num_envs
    return [save_env(env) for env in envs.envs]


def unsaveable_envs(envs) -> List[str]:
    """Why each sub-environment cannot be saved exactly ('' where it can)."""
    if not isinstance(envs, gym.vector.SyncVectorEnv):
        return ["it runs in a subprocess (async envs)"] * envs.num_envs
    reasons = []
    for env in envs.envs:
        layer = unsaveable_layer(env)
        reasons.append("" if layer is None else f"funcsac does not know how to save {layer} "
                       "(funcsac.driver.register_env_state adds it)")
    return reasons


def restore_envs(envs, saved: list, prev_done: np.ndarray) -> List[int]:
    """Restore sub-environments saved by ``save_envs`` into a freshly made vector env; returns the
    indices of those that were not saved (they need fresh episodes). The vector env's own state
    between steps is only which sub-envs reset next (NEXT_STEP mode): ``prev_done``."""
    if not isinstance(saved, list) or len(saved) != envs.num_envs:
        raise EnvStateError(f"saved environment state must be a list of {envs.num_envs} entries, "
                            f"got {type(saved).__name__}")
    fresh = [i for i, s in enumerate(saved) if s is None]
    if len(fresh) < envs.num_envs:
        if not isinstance(envs, gym.vector.SyncVectorEnv):
            raise EnvStateError("saved sub-environment states cannot go into async envs")
        for env, s in zip(envs.envs, saved):
            if s is not None:
                load_env(env, s)
        envs._autoreset_envs = prev_done.copy()
    return fresh
