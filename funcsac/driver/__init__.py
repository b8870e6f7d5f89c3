"""The driver: gymnasium collection, replay, evaluation, logging and checkpoints around the core."""
from .config import TrainConfig
from .run.callbacks import Report
from .envs.state import register_env_state
from .tools.evaluate import EvalResult, evaluate_agent
from .tools.load import Agent, load
from .run.loop import TrainResult, train
from . import presets
from .tools.plot import plot_runs

__all__ = ["TrainConfig", "TrainResult", "train", "plot_runs", "register_env_state", "Report",
           "EvalResult", "evaluate_agent", "Agent", "load", "presets"]
