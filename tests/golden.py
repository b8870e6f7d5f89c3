"""Golden outputs: what each preset's update and a short driver run compute, recorded so that a
change meant to move code, not numbers, can be checked to leave them bitwise as they were.

For each preset (``PRESETS``) at HalfCheetah's sizes (17 observations, 6 actions; DrQ's on
9x48x48 frames), 50 gradient steps from seed 0 on a fixed stream of random batches of 64 rows,
eagerly, on one thread, called as the driver calls them: ``update``, or ``critic_update`` at the
steps whose actor is not due, or ``update_many`` over ``utd`` batches at once where the preset's
``utd`` is above 1. Then a 2,000-step driver run of SAC on
Pendulum-v1 (1,000 of them learning, 64x64 networks, evaluated every 500 steps).

Each case gives a digest (SHA-256 of every tensor's bytes, in pytree order, and of every metric)
and a summary (each state field's change over the steps, projected on a few fixed random
directions) that another CPU can compare within a tolerance. ``python tests/golden.py`` records
them into ``tests/golden/`` for this machine (a CPU and torch version pair); the tests compare
against them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sys
from pathlib import Path

import optree
import torch

import funcsac
from funcsac.platform.cpu import cpu_description, flags_digest
from funcsac.driver.presets import PRESETS, preset

HERE = Path(__file__).parent / "golden"
UPDATES, DRIVER = HERE / "updates.json", HERE / "driver.json"
STEPS, ROWS, SKETCH = 50, 64, 8


def machine() -> str:
    """This machine as goldens are keyed: the CPU's model, a digest of all its instruction-set
    flags and torch's version (bitwise results hold on the same three)."""
    cpu = cpu_description()
    return f"{cpu['model']} [{flags_digest()}] torch {torch.__version__}"


def preset_config(name: str) -> tuple:
    """``(SACConfig, TrainConfig)`` of a preset at HalfCheetah's sizes (DrQ's: on its frames)."""
    settings = preset(name, "HalfCheetah-v5")
    if settings.get("pixels"):  # smaller frames than DrQ's 84x84, for the suite's time
        settings["image_size"] = 48
    config = funcsac.TrainConfig(**settings)
    if config.pixels:
        shape = (3 * config.frame_stack, config.image_size, config.image_size)
        return config.sac_config(17, 6, image_shape=shape), config
    return config.sac_config(17, 6), config


def _batch(cfg: funcsac.SACConfig, seed: int) -> funcsac.Batch:
    g = torch.Generator().manual_seed(1000 + seed)
    if cfg.image_shape:
        obs = lambda: torch.randint(0, 256, (ROWS, *cfg.image_shape), generator=g,  # noqa: E731
                                    dtype=torch.uint8)
    else:
        obs = lambda: torch.randn(ROWS, cfg.obs_dim, generator=g, dtype=cfg.dtype)  # noqa: E731
    return funcsac.Batch(obs=obs(), action=torch.rand(ROWS, cfg.act_dim, generator=g,
                                                      dtype=cfg.dtype) * 2 - 1,
                         reward=torch.randn(ROWS, generator=g, dtype=cfg.dtype), next_obs=obs(),
                         terminated=torch.rand(ROWS, generator=g) < 0.1)


def _stack(batches) -> funcsac.Batch:
    return funcsac.Batch(*(torch.stack(xs) for xs in zip(*batches)))


def digest(state, metrics: list) -> str:
    """SHA-256 of the state's tensors (pytree order) and of each step's metrics (sorted by
    name)."""
    h = hashlib.sha256()
    for x in optree.tree_leaves(state, namespace="funcsac"):
        h.update(x.detach().contiguous().cpu().numpy().tobytes())
    for m in metrics:
        for name in sorted(m):
            h.update(name.encode())
            h.update(m[name].detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def summary(state, start) -> dict:
    """How the steps moved each state field from ``start``: the change of its floating tensors,
    ``x - x_start``, projected on 8 fixed random directions (a sketch another CPU's run can be
    held against: a different computation points elsewhere, rounding barely moves it), by
    field; float64 values."""
    out = {}
    for f in dataclasses.fields(state):
        if f.name == "static":
            continue
        sketch = torch.zeros(SKETCH, dtype=torch.float64)
        pairs = zip(optree.tree_leaves(getattr(state, f.name), namespace="funcsac"),
                    optree.tree_leaves(getattr(start, f.name), namespace="funcsac"))
        for i, (x, x0) in enumerate(pairs):
            if x.is_floating_point():
                g = torch.Generator().manual_seed(i)
                directions = torch.randn(SKETCH, x.numel(), generator=g, dtype=torch.float64)
                sketch += directions @ (x.double() - x0.double()).flatten()
        out[f.name] = sketch.tolist()
    return out


def run_preset(name: str) -> tuple:
    """``(digest, summary)`` of a preset's 50 steps."""
    update, update_many = funcsac.update, funcsac.update_many
    cfg, config = preset_config(name)
    state = start = funcsac.init_state(cfg, seed=0)
    metrics = []
    if config.utd > 1:
        for block in range(STEPS // config.utd + (STEPS % config.utd > 0)):
            rows = _stack([_batch(cfg, block * config.utd + i) for i in range(config.utd)])
            state, m = update_many(state, rows)
            metrics.append(m)
        return digest(state, metrics), summary(state, start)
    for step in range(STEPS):
        due = step % cfg.policy_delay == 0
        fn = update if due else funcsac.critic_update
        state, m = fn(state, _batch(cfg, step))
        metrics.append(m)
    # the whole update on steps whose actor is not due too (its tensor arithmetic keeps them)
    for step in range(STEPS, STEPS + min(cfg.policy_delay, 3)):
        state, m = update(state, _batch(cfg, step))
        metrics.append(m)
    return digest(state, metrics), summary(state, start)


def driver_config() -> funcsac.TrainConfig:
    return funcsac.TrainConfig(env_id="Pendulum-v1", total_steps=2_000, learning_starts=1_000,
                               hidden_sizes=(64, 64), batch_size=64, eval_every=500,
                               eval_episodes=2, checkpoint_every=1_000, compile=False,
                               progress=False, seed=3)


def run_driver(run_dir) -> dict:
    """The 2,000-step run's evaluation returns and its final state's digest and summary."""
    result = funcsac.train(driver_config(), run_dir)
    return {"evals": [[e.step, e.return_mean, e.return_std] for e in result.evals],
            "digest": digest(result.state, [])}


def resume_driver(run_dir) -> dict:
    """The run in ``run_dir`` (the 2,000-step run's files) resumed to 2,200 steps: its last
    evaluation and its final state's digest."""
    config = driver_config()
    config = type(config).from_dict({**config.to_dict(), "total_steps": 2_200})
    result = funcsac.train(config, run_dir, resume=True)
    last = result.evals[-1]
    return {"eval": [last.step, last.return_mean, last.return_std],
            "digest": digest(result.state, [])}


def one_thread(fn, *args):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(threads)


def _merge(path: Path, key: str, values: dict) -> None:
    data = json.loads(path.read_text()) if path.exists() else {"machines": {}}
    data["machines"][key] = values
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def record(run_dir) -> None:
    """Record this machine's goldens into ``tests/golden/``."""
    HERE.mkdir(exist_ok=True)
    cases = {}
    for name in PRESETS:
        d, s = one_thread(run_preset, name)
        cases[name] = {"digest": d, "summary": s}
        print(name, d[:12], flush=True)
    _merge(UPDATES, machine(), cases)
    driver = one_thread(run_driver, run_dir)
    if not (HERE / "checkpoint").exists():  # the run a later funcsac must resume
        shutil.copytree(run_dir, HERE / "checkpoint")
    run = Path(run_dir).with_name("resumed")
    shutil.copytree(HERE / "checkpoint", run)
    _merge(DRIVER, machine(), {**driver, "resumed": one_thread(resume_driver, run)})


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    with tempfile.TemporaryDirectory() as tmp:
        record(Path(tmp) / "run")
