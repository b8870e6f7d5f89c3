"""One whole training run in this process, for ``bench/campaigns/e2e.py``:
``python -m bench.campaigns.e2e_child LIBRARY TASK SEED OUT.json``.

LIBRARY: ``funcsac`` (its defaults), ``funcsac-lr3e-4`` (the peers' learning rates), ``sb3`` or
``sbx``. Every library gets the same env, steps, learning starts, 256x256 networks, batch 256,
buffer, UTD 1 and automatic temperature. The JSON holds the learning part's wall time, its split
where the library reports one, the peak RSS, evaluation returns against wall-clock seconds since
the process started, and the final return over 10 deterministic episodes on seeds 10_000..10_009
(the same for every library).
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import csv
import json
import sys
import tempfile
import time

from bench.common.rss import peak_rss_mib

PROCESS_START = time.perf_counter()  # as near the process start as Python allows

TASKS = {
    "pendulum": dict(env_id="Pendulum-v1", total_steps=20_000, learning_starts=1_000,
                     eval_every=2_000),
    "halfcheetah": dict(env_id="HalfCheetah-v5", total_steps=100_000, learning_starts=5_000,
                        eval_every=10_000),
    "smoke": dict(env_id="Pendulum-v1", total_steps=600, learning_starts=300, eval_every=300),
}
CURVE_EPISODES, FINAL_EPISODES, EVAL_SEED = 3, 10, 10_000


def evaluate(policy, env_id: str, episodes: int) -> float:
    """Mean return of ``policy(obs) -> action`` (in the env's units) over ``episodes``."""
    import gymnasium as gym
    import numpy as np
    env = gym.make(env_id)
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=EVAL_SEED + i)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def run_funcsac(task: dict, seed: int, peer_lrs: bool) -> dict:
    import funcsac
    import torch
    from funcsac.driver.run import recorder
    from funcsac.driver.envs.spec import env_spec, scale_action
    from funcsac.driver.envs.make import make_vector_env

    lrs = dict(actor_lr=3e-4, critic_lr=3e-4, alpha_lr=3e-4) if peer_lrs else {}
    cfg = funcsac.TrainConfig(
        env_id=task["env_id"], total_steps=task["total_steps"],
        learning_starts=task["learning_starts"], eval_every=task["eval_every"],
        eval_episodes=CURVE_EPISODES, checkpoint_every=0, batch_size=256,
        hidden_sizes=(256, 256), seed=seed, progress=False, **lrs)
    curve, real_evaluate = [], recorder.evaluate

    def timed_evaluate(*args, **kwargs):
        result = real_evaluate(*args, **kwargs)
        curve.append((time.perf_counter() - PROCESS_START, result.step, result.return_mean))
        return result

    recorder.evaluate = timed_evaluate
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as run_dir:
        result = funcsac.train(cfg, run_dir)
        learn_s = time.perf_counter() - start
        with open(f"{run_dir}/metrics.csv") as f:
            last = list(csv.DictReader(f))[-1]
    split = {k[len("time_"):]: float(last[k]) for k in last if k.startswith("time_")}
    envs = make_vector_env(task["env_id"], 1)
    spec = env_spec(envs)
    envs.close()
    state = result.state

    def policy(obs):
        with torch.no_grad():
            a = funcsac.act(state, torch.as_tensor(obs, dtype=torch.float32))
        return scale_action(a.numpy(), spec)

    return {"learn_s": learn_s, "split": split, "curve": curve,
            "final_return": evaluate(policy, task["env_id"], FINAL_EPISODES)}


def run_peer(library: str, task: dict, seed: int) -> dict:
    import gymnasium as gym
    from stable_baselines3.common.callbacks import BaseCallback
    if library == "sbx":
        from sbx import SAC
    else:
        from stable_baselines3 import SAC

    curve = []

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % task["eval_every"] == 0:
                ret = evaluate(lambda o: self.model.predict(o, deterministic=True)[0],
                               task["env_id"], CURVE_EPISODES)
                curve.append((time.perf_counter() - PROCESS_START, self.num_timesteps, ret))
            return True

    start = time.perf_counter()
    model = SAC("MlpPolicy", gym.make(task["env_id"]), learning_starts=task["learning_starts"],
                batch_size=256, buffer_size=1_000_000, train_freq=1, gradient_steps=1,
                ent_coef="auto", policy_kwargs=dict(net_arch=[256, 256]), seed=seed, verbose=0)
    model.learn(total_timesteps=task["total_steps"], callback=Curve())
    learn_s = time.perf_counter() - start
    final = evaluate(lambda o: model.predict(o, deterministic=True)[0], task["env_id"],
                     FINAL_EPISODES)
    return {"learn_s": learn_s, "split": {}, "curve": curve, "final_return": final}


def main(library: str, task_name: str, seed: int, out: str) -> None:
    task = TASKS[task_name]
    if library.startswith("funcsac"):
        result = run_funcsac(task, seed, peer_lrs=library == "funcsac-lr3e-4")
    else:
        result = run_peer(library, task, seed)
    result.update(library=library, task=task_name, seed=seed, steps=task["total_steps"],
                  in_process_s=time.perf_counter() - PROCESS_START,
                  peak_rss_mib=peak_rss_mib())
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
