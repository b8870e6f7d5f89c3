"""Env steps per second of N rows stepped at once: a batched environment on tensors (``--task
pendulum``: ``torch/Pendulum-v1``, ``funcsac.driver.envs.torch_pendulum``; ``--task cheetah``:
``warp/HalfCheetah-v5`` on MuJoCo Warp) against gymnasium's vector env of N of its twin behind the
same protocol (``GymnasiumBatched``: numpy in the env, tensors out), uniformly random actions,
interleaved rounds in one process:

    python -m bench.studies.batched_envs [--task pendulum] [--envs 1,64,1024] [--steps 400]
        [--rounds 5] [--json F]

A row is the median over rounds of env steps (rows x steps) per second, autoresets included.
``--train``: whole ``funcsac train`` runs instead (``torch/Pendulum-v1`` against
``Pendulum-v1`` through numpy), ``--steps`` vector steps of N rows, learning after a third of
them, one eager gradient step a vector step (``gradient_steps`` 1), a 1-episode evaluation at
the end: env steps per second of the whole run, collected and learned.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the command's
import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import torch

from bench.common.results_md import machine
from funcsac import train
from funcsac.driver.config import TrainConfig
from funcsac.driver.envs.batched import GymnasiumBatched
from funcsac.driver.envs.make import gymnasium_id, make_batched_env

TASKS = {"pendulum": "torch/Pendulum-v1", "cheetah": "warp/HalfCheetah-v5"}


def make(env_id: str, n: int, device: str = "cpu"):
    """``n`` rows of ``env_id`` on ``device``: a batched env, or gymnasium's vector env behind the
    protocol."""
    if env_id != gymnasium_id(env_id):
        return make_batched_env(env_id, n, device, torch.float32)
    return GymnasiumBatched(gym.vector.SyncVectorEnv(
        [lambda: gym.make(env_id) for _ in range(n)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))


def steps_per_s(env, steps: int) -> float:
    """Env steps per second of ``steps`` batched steps of ``env`` (reset first, not timed)."""
    env.reset(seed=0)
    u = torch.rand(steps, env.num_envs, env.act_dim, generator=torch.Generator().manual_seed(0))
    actions = (env.action_low.cpu() + u * (env.action_high - env.action_low).cpu()).to(
        env.device)
    env.step(actions[0])  # a first step outside the clock (a Warp model's kernels load)
    synchronize(env.device)
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    synchronize(env.device)
    return steps * env.num_envs / (time.perf_counter() - start)


def synchronize(device: torch.device) -> None:
    """Wait for the work queued on ``device`` (a CUDA GPU's) to finish."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_rate(env_id: str, n: int, steps: int) -> float:
    """Env steps per second of a whole ``funcsac train`` run of ``steps`` vector steps of
    ``n`` rows of ``env_id`` (learning after a third of them, one gradient step each)."""
    config = TrainConfig(env_id=env_id, num_envs=n, total_steps=n * steps,
                         learning_starts=n * (steps // 3), gradient_steps=1, eval_every=0,
                         eval_episodes=1, checkpoint_every=0, compile=False, progress=False,
                         buffer_size=max(n * steps, 256))
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        train(config, run_dir)
        return n * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, default="pendulum")
    parser.add_argument("--envs", default="1,64,1024")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(n) for n in args.envs.split(",")]
    batched = TASKS[args.task]
    kinds = {"torch": batched, "gymnasium": gymnasium_id(batched)}
    if args.train:
        measure = {(kind, n): (lambda env_id, n: lambda: train_rate(env_id, n, args.steps))(
            env_id, n) for n in sizes for kind, env_id in kinds.items()}
    else:
        envs = {(kind, n): make(env_id, n) for n in sizes for kind, env_id in kinds.items()}
        measure = {key: (lambda env: lambda: steps_per_s(env, args.steps))(env)
                   for key, env in envs.items()}
    rates = {k: [] for k in measure}
    for _ in range(args.rounds):
        for key, rate in measure.items():
            rates[key].append(rate())
    rows = [{"envs": n, "torch": statistics.median(rates["torch", n]),
             "gymnasium": statistics.median(rates["gymnasium", n])} for n in sizes]
    what = "whole training runs" if args.train else "env steps only"
    print(f"N {kinds['gymnasium']} rows, env steps/s, {what} (medians of {args.rounds} rounds "
          f"of {args.steps} steps; {machine()}, torch threads {torch.get_num_threads()})\n")
    print(f"| envs | {batched} | gymnasium vector env | ratio |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['envs']} | {r['torch']:,.0f} | {r['gymnasium']:,.0f} | "
              f"{r['torch'] / r['gymnasium']:.1f}x |")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "task": batched,
                                         "train": args.train, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
