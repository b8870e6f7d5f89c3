"""One SAC update from images at DrQ's sizes, eager and compiled, and one action:

    pytest bench/benchmarks/test_images.py --benchmark-only

Batch 256 of 84x84 images with 3 stacked RGB frames (``uint8 [256, 9, 84, 84]``), DrQ's encoder
(50 features), 1024x1024 actor and critics (DrQ's), 6 action dimensions. ``extra_info`` holds the
FLOPs of the update's convolutions and matrix products (eager, one call) and the rate they run
at.
"""
import pytest
import torch

import funcsac
from bench.common.measure import count_flops
from bench.common.workloads import stepper

IMAGE = (9, 84, 84)
BATCH = 256


def drq_config(device) -> funcsac.SACConfig:
    return funcsac.SACConfig.of(obs_dim=50, act_dim=6, image_shape=IMAGE, hidden_sizes=(1024, 1024),
                             device=str(device))


def image_batch(cfg: funcsac.SACConfig, batch_size: int = BATCH) -> funcsac.Batch:
    g = torch.Generator().manual_seed(0)
    pixels = lambda: torch.randint(0, 256, (batch_size, *IMAGE), generator=g,  # noqa: E731
                                   dtype=torch.uint8)
    batch = funcsac.Batch(pixels(), torch.rand(batch_size, cfg.act_dim, generator=g) * 2 - 1,
                          torch.randn(batch_size, generator=g), pixels(), torch.zeros(batch_size))
    return funcsac.Batch(*(x.to(cfg.device) for x in batch))


@pytest.mark.parametrize("impl", ["funcsac-eager", "funcsac-compiled"])
def test_image_update(benchmark, device, impl):
    benchmark.group = f"images {device.type}"
    cfg = drq_config(device)
    batch = image_batch(cfg)
    fn = funcsac.update if impl == "funcsac-eager" else funcsac.compile_update()
    step = stepper(fn, funcsac.init_state(cfg, seed=0), batch)
    flops = count_flops(stepper(funcsac.update, funcsac.init_state(cfg, seed=0), batch))
    step()  # the compile, and the first call's allocations
    benchmark.pedantic(step, rounds=5, warmup_rounds=1)
    benchmark.extra_info.update(gflop=flops / 1e9,
                                gflop_per_s=flops / benchmark.stats.stats.median / 1e9)


def test_image_act(benchmark, device):
    benchmark.group = f"images {device.type}"
    cfg = drq_config(device)
    state = funcsac.init_state(cfg, seed=0)
    obs = image_batch(cfg, 1).obs[0]
    key = funcsac.keys.make_key(0, device)
    benchmark(lambda: funcsac.act(state, obs, deterministic=False, key=key))


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "HalfCheetah-v5"])
def test_pixel_env_step(benchmark, env_id):
    """One step of an env observed through 84x84 frames, 3 stacked (``--pixels``): the physics,
    the rendering (MuJoCo: EGL, or ``MUJOCO_GL``), the resize and the stacking."""
    if env_id.startswith("HalfCheetah"):
        pytest.importorskip("mujoco")
    from funcsac.driver.envs.make import Pixels, make_eval_env
    benchmark.group = "pixel env step"
    env = make_eval_env(env_id, pixels=Pixels(84, 3))
    env.reset(seed=0)
    action = env.action_space.sample()

    def step():
        if env.step(action)[2]:
            env.reset()

    try:
        benchmark.pedantic(step, rounds=200, warmup_rounds=10)
    finally:
        env.close()
