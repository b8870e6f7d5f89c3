"""Env steps per second of N Pendulum-v1 rows stepped at once: the torch Pendulum on tensors
(``funcsac.driver.envs.torch_pendulum``) against gymnasium's vector env of N Pendulum-v1 behind the
same protocol (``GymnasiumBatched``: numpy in the env, tensors out), uniformly random torques,
interleaved rounds in one process:

    python -m bench.studies.batched_envs [--envs 1,64,1024] [--steps 400] [--rounds 5] [--json F]

A row is the median over rounds of env steps (rows x steps) per second, autoresets included.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the command's
import argparse
import json
import statistics
import time
from pathlib import Path

import gymnasium as gym
import torch

from bench.common.results_md import machine
from funcsac.driver.envs.batched import GymnasiumBatched
from funcsac.driver.envs.torch_pendulum import TorchPendulum


def make(kind: str, n: int):
    if kind == "torch":
        return TorchPendulum(n)
    return GymnasiumBatched(gym.vector.SyncVectorEnv(
        [lambda: gym.make("Pendulum-v1") for _ in range(n)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))


def steps_per_s(env, steps: int) -> float:
    """Env steps per second of ``steps`` batched steps of ``env`` (reset first, not timed)."""
    env.reset(seed=0)
    actions = torch.rand(steps, env.num_envs, 1, generator=torch.Generator().manual_seed(0)) * 4 - 2
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    return steps * env.num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="1,64,1024")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(n) for n in args.envs.split(",")]
    envs = {(kind, n): make(kind, n) for n in sizes for kind in ("torch", "gymnasium")}
    rates = {k: [] for k in envs}
    for _ in range(args.rounds):
        for key, env in envs.items():
            rates[key].append(steps_per_s(env, args.steps))
    rows = [{"envs": n, "torch": statistics.median(rates["torch", n]),
             "gymnasium": statistics.median(rates["gymnasium", n])} for n in sizes]
    print(f"N Pendulum-v1 rows, env steps/s (medians of {args.rounds} rounds of {args.steps} "
          f"steps; {machine()}, torch threads {torch.get_num_threads()})\n")
    print("| envs | torch Pendulum | gymnasium vector env | ratio |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['envs']} | {r['torch']:,.0f} | {r['gymnasium']:,.0f} | "
              f"{r['torch'] / r['gymnasium']:.1f}x |")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
