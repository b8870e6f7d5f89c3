"""The driver: gymnasium collection, replay, evaluation, logging and checkpoints around the core."""
from .config import TrainConfig
from .envstate import register_env_state
from .loop import TrainResult, train
from .plot import plot_runs

__all__ = ["TrainConfig", "TrainResult", "train", "plot_runs", "register_env_state"]
