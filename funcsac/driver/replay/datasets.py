"""Offline datasets of transitions: funcsac's own ``.npz`` files and local Minari datasets."""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import NamedTuple, Optional, Tuple, Union

import gymnasium as gym
import numpy as np
import torch

from ...platform.files import writable, write_atomically
from .buffer import ReplayBuffer
from ..envs.spec import EnvSpec, check_spaces
from .nstep import NStepQueue

FORMAT, VERSION = "funcsac-transitions", 1
ACTION_TOLERANCE = 1e-5  # actions may leave [low, high] by this fraction of high - low
_EXPECTED = ("expected a .npz file written by funcsac (save_dataset, `funcsac collect`) or a "
             "local Minari dataset directory (holding data/metadata.json)")
_NDIMS = dict(obs=2, action=2, reward=1, next_obs=2, terminated=1, truncated=1)


class Transitions(NamedTuple):
    """``T`` transitions in time order with each episode's rows contiguous. An episode ends at a
    row with ``terminated`` or ``truncated``; the last row always ends one."""

    obs: np.ndarray  # [T, obs_dim]
    action: np.ndarray  # [T, act_dim], in the environment's units
    reward: np.ndarray  # [T]
    next_obs: np.ndarray  # [T, obs_dim]
    terminated: np.ndarray  # [T] bool
    truncated: np.ndarray  # [T] bool


def load_dataset(path: Union[str, Path], spec: Optional[EnvSpec] = None,
                 env_id: Optional[str] = None) -> Transitions:
    """The transitions in ``path``: a ``.npz`` written by ``save_dataset`` or a local Minari
    dataset directory (or its ``data`` folder). Checked against ``spec`` when given (sizes, and
    actions within its bounds), else a Minari dataset's actions against its own action space;
    with ``env_id``, refused if recorded on another environment (one that names none passes).
    Raises ``ValueError`` saying what is wrong."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path} does not exist: {_EXPECTED}")
    if path.is_dir():
        transitions, own_spec, recorded = _read_minari(path)
    else:
        (transitions, recorded), own_spec = _read_npz(path), None
    transitions = _checked(transitions, own_spec if spec is None else spec, str(path))
    if env_id is not None and recorded is not None and recorded != env_id:
        raise ValueError(f"{path} was recorded on {recorded}, not on this run's environment "
                         f"{env_id}; to learn from it anyway, give --offline-any-env "
                         "(TrainConfig.offline_any_env=True)")
    return transitions


def save_dataset(path: Union[str, Path], transitions: Transitions, env_id: str) -> Path:
    """Write ``transitions`` (checked as ``load_dataset`` checks them) of environment ``env_id``
    atomically to ``path``, ``.npz`` appended if missing; returns the path written. Equal
    transitions give identical bytes (the archive's members carry no time stamps)."""
    path = npz_path(path)
    t = _checked(transitions, None, "transitions to save")
    arrays = dict(zip(t._fields, t), format=np.array(FORMAT), version=np.array(VERSION),
                  env_id=np.array(env_id))
    write_atomically(path, lambda f: _write_npz(f, arrays))
    return path


def _write_npz(file, arrays: dict) -> None:
    """``np.savez`` with every member dated 1980-01-01, so the bytes depend on the arrays only."""
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, x in arrays.items():
            with archive.open(zipfile.ZipInfo(name + ".npy"), "w", force_zip64=True) as member:
                np.lib.format.write_array(member, x, allow_pickle=False)


def npz_path(path: Union[str, Path]) -> Path:
    """``path`` with ``.npz`` appended if missing; ``ValueError`` if it cannot be written
    (``platform.files.writable``; a missing folder is made when it is written)."""
    path = Path(path)
    return writable(path if path.suffix == ".npz" else path.with_name(path.name + ".npz"))


def to_policy_actions(action: np.ndarray, spec: EnvSpec) -> np.ndarray:
    """Actions ``[..., act_dim]`` in the environment's bounds mapped to [-1, 1] (the inverse of
    ``scale_action``) and clipped there; float32, or float64 for float64 actions."""
    action = np.asarray(action)
    policy = 2.0 * (action - spec.low) / (spec.high - spec.low) - 1.0
    return policy.clip(-1.0, 1.0).astype(np.promote_types(action.dtype, np.float32))


def dataset_buffer(path: Union[str, Path], spec: EnvSpec, device, dtype=torch.float32,
                   n_step: int = 1, env_id: Optional[str] = None) -> ReplayBuffer:
    """The dataset in ``path`` (read and checked by ``load_dataset``, against ``env_id`` when
    given) as a full replay buffer of its transitions, actions mapped to policy units [-1, 1].
    With ``n_step > 1`` its rows are n-step transitions made by an ``NStepQueue`` exactly as
    online ones are, so they end at the dataset's episode ends."""
    t = load_dataset(path, spec, env_id)
    t = t._replace(action=to_policy_actions(t.action, spec))
    if n_step == 1:
        rows = dict(obs=t.obs, action=t.action, reward=t.reward, next_obs=t.next_obs,
                    terminated=t.terminated)
    else:  # one transition at a time through the queue, as one sub-environment's steps
        queue, pushed = NStepQueue(1, n_step, spec.obs_dim, spec.act_dim), []
        valid = np.ones(1, bool)
        for i in range(len(t.obs)):
            pushed.append(queue.push(valid, *(x[i:i + 1] for x in t)))
        rows = {k: np.concatenate([p[k] for p in pushed]) for k in pushed[0] if k != "env"}
    buffer = ReplayBuffer(len(rows["obs"]), spec.obs_dim, spec.act_dim, device, dtype, n_step)
    buffer.add({k: torch.as_tensor(v) for k, v in rows.items()})
    return buffer


def _read_npz(path: Path) -> Tuple[Transitions, Optional[str]]:
    """The transitions of a funcsac ``.npz`` and the env id it was recorded on (None: not
    named)."""
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: unknown format; {_EXPECTED}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path} is damaged or unreadable ({e})") from e
    if str(arrays.get("format", "")) != FORMAT:
        raise ValueError(f"{path}: unknown format (a .npz without funcsac's format marker); "
                         f"{_EXPECTED}")
    if int(arrays.get("version", -1)) != VERSION:
        raise ValueError(f"{path} has dataset format version {arrays.get('version')}; this "
                         f"funcsac reads version {VERSION}")
    missing = [name for name in Transitions._fields if name not in arrays]
    if missing:
        raise ValueError(f"{path} lacks the arrays {', '.join(missing)}")
    env_id = str(arrays["env_id"]) if "env_id" in arrays else None
    return Transitions(*(arrays[name] for name in Transitions._fields)), env_id


def _read_minari(path: Path) -> Tuple[Transitions, EnvSpec, Optional[str]]:
    """The transitions of the Minari dataset in ``path``, the spec of its spaces and the env id
    its metadata names (None: none); each episode's last row is marked truncated unless it
    terminates."""
    folder = next((f for f in (path / "data", path) if (f / "metadata.json").is_file()), None)
    if folder is None:
        raise ValueError(f"{path} is a directory without data/metadata.json: {_EXPECTED}")
    try:
        import minari
        dataset = minari.MinariDataset(folder)
    except ImportError as e:
        raise ValueError(f"{path} is a Minari dataset; reading it needs minari ({e}): "
                         "pip install 'funcsac[offline]'") from e
    except (ValueError, KeyError, OSError, AssertionError) as e:
        raise ValueError(f"cannot read the Minari dataset in {path} ({e!r})") from e
    name = f"Minari dataset {dataset.id}"
    obs_space = dataset.observation_space
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ValueError(f"{name}: observation space {obs_space} is not supported; funcsac reads "
                         "flat (1-D Box) observations only, not Dict, Tuple or image ones")
    spec = check_spaces(name, obs_space, dataset.action_space)
    columns = {field: [] for field in Transitions._fields}
    for episode in dataset.iterate_episodes():
        obs, steps = np.asarray(episode.observations), len(episode.rewards)
        arrays = (episode.actions, episode.terminations, episode.truncations)
        if len(obs) != steps + 1 or any(len(x) != steps for x in arrays):
            raise ValueError(f"{name}: episode {episode.id} has inconsistent lengths: {len(obs)} "
                             f"observations, {[len(x) for x in arrays]} actions, terminations "
                             f"and truncations, {steps} rewards; expected T + 1 observations "
                             "and T of the others")
        if steps == 0:
            continue
        truncated = np.array(episode.truncations, dtype=bool)
        truncated[-1] |= not episode.terminations[-1]
        for field, x in zip(Transitions._fields, (obs[:-1], episode.actions, episode.rewards,
                                                  obs[1:], episode.terminations, truncated)):
            columns[field].append(np.asarray(x))
    if not columns["obs"]:
        raise ValueError(f"{name} in {path} holds no transitions (empty dataset)")
    env_id = None if dataset.env_spec is None else dataset.env_spec.id
    return Transitions(*(np.concatenate(xs) for xs in columns.values())), spec, env_id


def _checked(t: Transitions, spec: Optional[EnvSpec], source: str) -> Transitions:
    """``t`` as numpy arrays, with its last row marked truncated unless it ends an episode;
    raises ``ValueError`` for wrong shapes or dtypes, NaN or inf, sizes that differ from
    ``spec`` or actions outside its bounds."""
    t = Transitions(*(np.asarray(x) for x in t))
    for field, x in zip(t._fields, t):
        if x.ndim != _NDIMS[field]:
            raise ValueError(f"{source}: {field} has shape {x.shape}; expected "
                             f"{'[T, dim]' if _NDIMS[field] == 2 else '[T]'}")
    lengths = {field: len(x) for field, x in zip(t._fields, t)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{source}: inconsistent lengths {lengths}; expected one row per "
                         "transition in each")
    if lengths["obs"] == 0:
        raise ValueError(f"{source} holds no transitions (empty dataset)")
    if t.next_obs.shape[1] != t.obs.shape[1]:
        raise ValueError(f"{source}: obs has {t.obs.shape[1]} values per row but next_obs "
                         f"{t.next_obs.shape[1]}")
    for field in ("terminated", "truncated"):
        if getattr(t, field).dtype != bool:
            raise ValueError(f"{source}: {field} has dtype {getattr(t, field).dtype}; "
                             "expected bool")
    for field in ("obs", "action", "reward", "next_obs"):
        x = getattr(t, field)
        if not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
            raise ValueError(f"{source}: {field} has dtype {x.dtype}; expected real numbers")
        if not np.isfinite(x).all():
            raise ValueError(f"{source}: {field} holds NaN or inf (first at row "
                             f"{np.argwhere(~np.isfinite(x))[0][0]}); expected finite values")
    if spec is not None:
        _check_against(t, spec, source)
    if not (t.terminated[-1] or t.truncated[-1]):
        t = t._replace(truncated=np.append(t.truncated[:-1], True))
    return t


def _check_against(t: Transitions, spec: EnvSpec, source: str) -> None:
    """Raise ``ValueError`` unless ``t``'s sizes are ``spec``'s and its actions in its bounds."""
    for what, got, want in (("observations", t.obs.shape[1], spec.obs_dim),
                            ("actions", t.action.shape[1], spec.act_dim)):
        if got != want:
            raise ValueError(f"{source}: {what} have {got} values per row but the environment's "
                             f"have {want} (obs_dim {spec.obs_dim}, act_dim {spec.act_dim})")
    slack = ACTION_TOLERANCE * (spec.high - spec.low)
    outside = (t.action < spec.low - slack) | (t.action > spec.high + slack)
    if outside.any():
        row = np.argwhere(outside)[0][0]
        raise ValueError(f"{source}: actions outside the environment's bounds (first at row "
                         f"{row}: {t.action[row]}, bounds low {spec.low}, high {spec.high}); "
                         "expected actions in the environment's units")
