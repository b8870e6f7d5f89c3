"""Discrete SAC against DQN on the classic discrete tasks: funcsac with its defaults (one set for
every task, seeds vmapped in one process) and stable-baselines3's DQN with rl-baselines3-zoo's
tuned hyperparameters for each task (one process a seed), at the zoo's budget, same seeds and the
same evaluation (10 deterministic episodes every 5,000 steps).

    python -m bench.campaigns.discrete --tasks CartPole-v1,Acrobot-v1 --num-seeds 3
    python -m bench.campaigns.discrete --tasks MountainCar-v0 --flags "--noise-hold 0"
    python -m bench.campaigns.discrete --report     # the table into bench/results/RESULTS.md

Each finished run appends one JSON line to ``--results`` (a funcsac row with the ``flags`` it ran
beside the defaults); a rerun skips what is there, and an interrupted funcsac run continues from
its checkpoint in ``--runs-dir``. Needs the
``bench`` extra (stable-baselines3), and ``gymnasium[box2d]`` for LunarLander-v3.
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common.results_md import cpu_of, machine, write_block
from bench.common.paths import RESULTS, child_env, python_module

EVAL_EVERY, EVAL_EPISODES = 5000, 10
# rl-baselines3-zoo hyperparams/dqn.yml (DLR-RM/rl-baselines3-zoo, 22e3ff2): the budget
# (n_timesteps) is the one both sides run; every network is 256 x 256
ZOO_DQN = {
    "CartPole-v1": dict(n_timesteps=50_000, learning_rate=2.3e-3, batch_size=64,
                        buffer_size=100_000, learning_starts=1000, gamma=0.99,
                        target_update_interval=10, train_freq=256, gradient_steps=128,
                        exploration_fraction=0.16, exploration_final_eps=0.04),
    "Acrobot-v1": dict(n_timesteps=100_000, learning_rate=6.3e-4, batch_size=128,
                       buffer_size=50_000, learning_starts=0, gamma=0.99,
                       target_update_interval=250, train_freq=4, gradient_steps=-1,
                       exploration_fraction=0.12, exploration_final_eps=0.1),
    "MountainCar-v0": dict(n_timesteps=120_000, learning_rate=4e-3, batch_size=128,
                           buffer_size=10_000, learning_starts=1000, gamma=0.98,
                           target_update_interval=600, train_freq=16, gradient_steps=8,
                           exploration_fraction=0.2, exploration_final_eps=0.07),
    "LunarLander-v3": dict(n_timesteps=100_000, learning_rate=6.3e-4, batch_size=128,
                           buffer_size=50_000, learning_starts=0, gamma=0.99,
                           target_update_interval=250, train_freq=4, gradient_steps=-1,
                           exploration_fraction=0.12, exploration_final_eps=0.1),
}


def evaluate(policy, task: str, episodes: int, seed: int) -> float:
    """The mean return of ``episodes`` episodes of ``policy(obs) -> action``."""
    import gymnasium as gym
    env, total = gym.make(task), 0.0
    for i in range(episodes):
        obs, _ = env.reset(seed=10_000 * seed + i)
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += float(reward)
            done = terminated or truncated
    return total / episodes


def run_dqn(task: str, seed: int) -> dict:
    """One SB3 DQN run: ``{"curve": [[step, return]], "wall_s"}``."""
    import gymnasium as gym
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback

    settings = dict(ZOO_DQN[task])
    budget, curve = settings.pop("n_timesteps"), []

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % EVAL_EVERY == 0:
                curve.append([self.num_timesteps, evaluate(
                    lambda o: int(self.model.predict(o, deterministic=True)[0]), task,
                    EVAL_EPISODES, seed)])
            return True

    start = time.perf_counter()
    model = DQN("MlpPolicy", gym.make(task), policy_kwargs={"net_arch": [256, 256]}, seed=seed,
                verbose=0, **settings)
    model.learn(total_timesteps=budget, callback=Curve())
    return {"curve": curve, "wall_s": time.perf_counter() - start}


def run_funcsac(task: str, seeds: list, run_dir: Path, flags: list) -> dict:
    """``funcsac train`` with its defaults and ``flags``, the seeds vmapped, in ``run_dir``,
    continuing from its checkpoint where an earlier piece stopped: ``{"curves": {seed: [[step,
    return]]}, "wall_s"}`` (the pieces' wall time summed)."""
    resuming = (run_dir / "checkpoint.pt").exists()
    # a folder without a checkpoint (a piece stopped before its first) is moved aside
    resume = ["--resume"] if resuming else ["--overwrite"] if run_dir.exists() else []
    walls_path = run_dir.parent / (run_dir.name + ".walls.json")
    walls = json.loads(walls_path.read_text()) if resuming and walls_path.exists() else []
    start = time.perf_counter()
    try:
        subprocess.run(["funcsac", "train", "--env-id", task, "--seed", str(seeds[0]),
                        "--num-seeds", str(len(seeds)), "--total-steps",
                        str(ZOO_DQN[task]["n_timesteps"]), "--eval-every", str(EVAL_EVERY),
                        "--eval-episodes", str(EVAL_EPISODES), *flags, "--run-dir",
                        str(run_dir), *resume, "--no-progress"], check=True,
                       stdout=subprocess.DEVNULL)
    finally:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        walls_path.write_text(json.dumps(walls + [time.perf_counter() - start]))
    curves = {s: [] for s in seeds}
    lines = (run_dir / "eval.csv").read_text().splitlines()
    header = lines[0].split(",")
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        curves[int(row.get("seed", seeds[0]))].append([int(row["step"]),
                                                        float(row["return_mean"])])
    return {"curves": curves, "wall_s": sum(json.loads(walls_path.read_text()))}


def campaign(args) -> None:
    done = set()
    if args.results.exists():
        done = {(r["library"], r["task"], r["seed"], tuple(r.get("flags", ()))) for r in
                map(json.loads, args.results.read_text().splitlines())}
    seeds, flags = list(range(1, args.num_seeds + 1)), shlex.split(args.flags)
    for task in args.tasks.split(","):
        if any(("funcsac", task, s, tuple(flags)) not in done for s in seeds):
            name = "-".join([task, f"seeds{len(seeds)}", *(f.lstrip("-") for f in flags)])
            result = run_funcsac(task, seeds, args.runs_dir / name, flags)
            for s in seeds:
                append(args.results, {"library": "funcsac", "task": task, "seed": s,
                                      "flags": flags, "curve": result["curves"][s],
                                      "wall_s": result["wall_s"] / len(seeds), "cpu": machine()})
        for s in seeds:
            if ("sb3-dqn", task, s, ()) not in done:
                out = subprocess.run([*python_module(__spec__.name), "--dqn-child", task, str(s)],
                                     check=True, capture_output=True, text=True,
                                     env=child_env()).stdout
                append(args.results, {"library": "sb3-dqn", "task": task, "seed": s,
                                      **json.loads(out.splitlines()[-1]), "cpu": machine()})


def append(path: Path, row: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def report(args) -> None:
    rows = [json.loads(line) for line in args.results.read_text().splitlines() if line]
    lines = ["Discrete SAC with funcsac's defaults (one set for every task: target entropy "
             "0.25 log n, 3-step transitions, learning after 2,000 random steps, each noise "
             "draw held 1-32 steps) against stable-baselines3's DQN with rl-baselines3-zoo's "
             "tuned settings for each task (`python -m bench.campaigns.discrete`): the zoo's "
             "budget, seeds "
             "1-3, 10 deterministic episodes every 5,000 steps. A funcsac row with flags ran "
             "them beside the defaults (`--noise-hold 0 --noise-hold-max 16`: the defaults "
             "before the held noise). Best: the best evaluation of each seed; final: the last "
             "evaluation, mean ± std over the seeds. 2 cores each. Learning only: no wall-clock "
             "figures (some runs shared the machine with other work).", "",
             "| task | budget | library | best of each seed | final | CPU |",
             "|---|---|---|---|---|---|"]
    groups = sorted({(r["library"], tuple(r.get("flags", ()))) for r in rows},
                    key=lambda g: (g[0] != "funcsac", g[1] != (), g))
    for task in ZOO_DQN:
        for library, flags in groups:
            runs = sorted((r for r in rows if r["task"] == task and r["library"] == library
                           and tuple(r.get("flags", ())) == flags), key=lambda r: r["seed"])
            if not runs:
                continue
            best = ", ".join(f"{max(v for _, v in r['curve']):.0f}" for r in runs)
            final = [r["curve"][-1][1] for r in runs]
            spread = statistics.stdev(final) if len(final) > 1 else 0.0
            name = f"{library} `{shlex.join(flags)}`" if flags else library
            lines.append(f"| {task} | {ZOO_DQN[task]['n_timesteps']:,} | {name} | {best} | "
                         f"{statistics.mean(final):.1f} ± {spread:.1f} | "
                         f"{cpu_of(runs[0]['cpu'])} |")
    write_block("discrete", "\n".join(lines))


def main() -> None:
    if sys.argv[1:2] == ["--dqn-child"]:
        print(json.dumps(run_dqn(sys.argv[2], int(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(ZOO_DQN))
    parser.add_argument("--num-seeds", type=int, default=3)
    parser.add_argument("--flags", default="",
                        help="funcsac train flags beside the defaults, one string")
    parser.add_argument("--results", type=Path, default=RESULTS / "discrete.jsonl")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/discrete"),
                        help="funcsac's run folders; an interrupted run continues there")
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    report(args) if args.report else campaign(args)


if __name__ == "__main__":
    main()
