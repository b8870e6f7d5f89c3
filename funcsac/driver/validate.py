"""Checks of a ``TrainConfig``'s run settings (its agent fields are checked by ``SACConfig``)."""
from __future__ import annotations

from ..platform.devices import check_device
from .envs.make import BATCHED_ENVS
from .factories import FACTORY_FIELDS, check_factory_name
from .run.agents import parse_sweep


def check_train_config(config) -> None:
    """Raise ``ValueError`` naming the first field of ``config`` of the wrong type or out of
    range."""
    for name in ("env_id", "sweep", "autoreset_mode", "device", "dtype", "wandb_project",
                 "wandb_mode", "offline_data"):
        if not isinstance(getattr(config, name), str):
            raise ValueError(f"TrainConfig.{name} must be a string, got "
                             f"{getattr(config, name)!r}")
    for name in ("async_envs", "compile", "compile_in_background", "progress", "tensorboard",
                 "prioritized", "offline_any_env", "pixels", "pixels_with_state",
                 "hold_random_actions"):
        if not isinstance(getattr(config, name), bool):
            raise ValueError(f"TrainConfig.{name} must be true or false, got "
                             f"{getattr(config, name)!r}")
    for name in FACTORY_FIELDS:
        check_factory_name(getattr(config, name), name)
    if not config.env_id:
        raise ValueError("TrainConfig.env_id must name a gymnasium environment, got ''")
    check_device(config.device, "TrainConfig.device")
    parse_sweep(config.sweep)
    for name in ("total_steps", "num_seeds", "num_envs", "buffer_size", "batch_size", "utd",
                 "eval_episodes", "log_every"):
        _positive_int(name, getattr(config, name))
    if config.n_step is not None:
        _positive_int("n_step", config.n_step)
    if config.gradient_steps is not None:
        _positive_int("gradient_steps", config.gradient_steps)
        if config.utd != 1:
            raise ValueError(f"TrainConfig.gradient_steps {config.gradient_steps} and utd "
                             f"{config.utd} both say how much to learn per step; give one")
    if config.learning_starts is not None:
        _positive_int("learning_starts", config.learning_starts, minimum=0)
    if config.noise_hold_max is not None:
        _positive_int("noise_hold_max", config.noise_hold_max)
    if config.noise_hold is not None and not (
            isinstance(config.noise_hold, (int, float)) and not isinstance(config.noise_hold, bool)
            and 0.0 <= config.noise_hold < 100.0):
        raise ValueError(f"TrainConfig.noise_hold must be a number in [0, 100) (0: no hold) or "
                         f"None (the policy family's), got {config.noise_hold!r}")
    for name in ("eval_every", "checkpoint_every", "seed", "reset_every"):
        _positive_int(name, getattr(config, name), minimum=0)
    if not (isinstance(config.reset_at, tuple) and all(
            isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in config.reset_at)):
        raise ValueError(f"TrainConfig.reset_at must be environment steps (integers > 0), got "
                         f"{config.reset_at!r}")
    if config.autoreset_mode not in ("same-step", "next-step"):
        raise ValueError("TrainConfig.autoreset_mode must be 'same-step' or 'next-step', "
                         f"got {config.autoreset_mode!r}")
    bad = set(config.wandb_project) & set("/\\#?%:")
    if bad or len(config.wandb_project) > 128:
        raise ValueError("TrainConfig.wandb_project must be a W&B project name (at most 128 "
                         f"characters, none of / \\ # ? % :), got {config.wandb_project!r}")
    if config.wandb_mode not in ("online", "offline"):
        raise ValueError("TrainConfig.wandb_mode must be 'online' or 'offline', got "
                         f"{config.wandb_mode!r}")
    for name, low, high in (("priority_alpha", 0.0, 10.0), ("priority_beta", 0.0, 1.0),
                            ("priority_epsilon", 1e-12, 1.0)):
        value = getattr(config, name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
                low <= value <= high):
            raise ValueError(f"TrainConfig.{name} must be a number in [{low}, {high}], got "
                             f"{value!r}")
    _check_offline(config)
    _check_pixels(config)
    _check_batched(config)
    if config.dtype not in ("float32", "float64"):
        raise ValueError("TrainConfig.dtype must be 'float32' or 'float64', got "
                         f"{config.dtype!r}")
    config.sac_config(1, 1)  # validates the agent's fields
    if config.batch_size > config.buffer_size:
        raise ValueError(f"TrainConfig.batch_size ({config.batch_size}) must not exceed "
                         f"buffer_size ({config.buffer_size})")


def _check_batched(config) -> None:
    """An environment stepped on tensors (``envs.make.BATCHED_ENVS``) takes what its collect
    stage does: vector observations, rows in this process, same-step autoreset."""
    if config.env_id not in BATCHED_ENVS:
        return
    refused = {"pixels": (config.pixels, "false", "its rows observe vectors"),
               "async_envs": (config.async_envs, "false", "its rows step in this process"),
               "autoreset_mode": (config.autoreset_mode != "same-step", "same-step", "its rows "
                                  "start their next episode in the step the last one ends")}
    for name, (wrong, expected, why) in refused.items():
        if wrong:
            raise ValueError(f"TrainConfig.{name} must be {expected} with {config.env_id}, an "
                             f"environment stepped on tensors ({why}); got "
                             f"{getattr(config, name)!r}")


def _check_pixels(config) -> None:
    """Frame sizes and the action repeat, and what pixel runs do not take: n-step returns,
    offline data, observation normalisation (the replay buffer's memory is checked when the run
    starts)."""
    for name in ("image_size", "frame_stack", "image_features"):
        _positive_int(name, getattr(config, name))
    if config.action_repeat is not None:
        _positive_int("action_repeat", config.action_repeat)
    if config.pixels_with_state and not config.pixels:
        raise ValueError("TrainConfig.pixels_with_state needs pixels=True (the state goes beside "
                         "the frames)")
    if not config.pixels:
        return
    if config.image_size < 15:
        raise ValueError(f"TrainConfig.image_size must be at least 15 pixels (DrQ's encoder), "
                         f"got {config.image_size}")
    check_image_run(config, "pixels=True")


def check_image_run(config, why: str) -> None:
    """Refuse what runs on image observations do not take (n-step returns, offline data,
    observation normalisation); ``why`` says what makes the observations images."""
    for name, off in (("n_step", 1), ("offline_data", ""), ("normalize_obs", False)):
        if getattr(config, name) not in (off, None):
            raise ValueError(f"TrainConfig.{name} is not supported with {why} (got "
                             f"{getattr(config, name)!r})")


def _check_offline(config) -> None:
    """``offline_ratio`` in (0, 1); with ``offline_data``, a split that leaves rows to both parts
    of a batch, and no prioritized replay. Whether the dataset exists and fits the environment is
    checked when a run starts (a finished run stays loadable without it)."""
    ratio = config.offline_ratio
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0.0 < ratio < 1.0:
        raise ValueError("TrainConfig.offline_ratio must be a number in (0, 1) (exclusive), got "
                         f"{ratio!r}")
    if not config.offline_data:
        return
    if "\0" in config.offline_data:
        raise ValueError("TrainConfig.offline_data must be a path (of a .npz file or a Minari "
                         f"dataset directory), got {config.offline_data!r}")
    if config.prioritized:
        raise ValueError("TrainConfig.offline_data cannot be combined with prioritized=True: "
                         "prioritized replay applies to online data only; mixing priorities "
                         "with uniformly drawn offline rows is not supported")
    offline = config.offline_rows
    if not 0 < offline < config.batch_size:
        raise ValueError(f"TrainConfig.offline_ratio {ratio} of batch_size {config.batch_size} "
                         f"gives {offline} offline rows per batch; each batch needs at least one "
                         "offline and one online row")


def _positive_int(name: str, value, minimum: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"TrainConfig.{name} must be an integer >= {minimum}, got {value!r}")
