"""The driver: gymnasium collection, replay, evaluation, logging and checkpoints around the core."""
from .config import TrainConfig
from .callbacks import Report
from .envstate import register_env_state
from .evaluate import EvalResult, evaluate_agent
from .load import Agent, load
from .loop import TrainResult, train
from .plot import plot_runs

__all__ = ["TrainConfig", "TrainResult", "train", "plot_runs", "register_env_state", "Report",
           "EvalResult", "evaluate_agent", "Agent", "load"]
