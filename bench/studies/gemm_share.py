"""The compiled update's matrix-product FLOPs over its time, against the best GEMM rate measured
at its shapes in the same run (interleaved, medians): ``python -m bench.studies.gemm_share``.

The update is the one ``funcsac train`` runs on Pendulum-v1 (obs 3, act 1, 256x256, batch 256,
2 critics), loaded from (or compiled into) the compile store.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import statistics

import funcsac  # before torch, as funcsac train: MKL's kernels (funcsac.accel.blas)
import numpy as np
import torch

from bench.common.measure import count_flops, median_us
from funcsac.driver.config import TrainConfig
from funcsac.driver.envs.spec import EnvSpec
from funcsac.driver.run.step_functions import example_batches, initial_state, step_functions
from funcsac.accel.compile.stored import compile_stored

# (m, k, n) of the update's products: hidden layers, a small-K input layer, the heads, the pair
# of critics in one product
SHAPES = [(256, 256, 256), (256, 4, 256), (256, 256, 1), (256, 256, 2), (512, 256, 256)]


def main() -> None:
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    config = TrainConfig(env_id="Pendulum-v1")
    spec = EnvSpec(3, 1, np.array([-2.0]), np.array([2.0]))
    sac_config = config.sac_config(3, 1)
    ((name, fn),) = step_functions(config, 1).items()
    state = initial_state(config, sac_config)
    batch = example_batches(config, spec, sac_config, 1)
    batch = batch._replace(obs=torch.randn_like(batch.obs), next_obs=torch.randn_like(batch.obs),
                           reward=torch.randn_like(batch.reward),
                           action=torch.rand_like(batch.action) * 2 - 1)
    compiled = compile_stored(fn, (state, batch), name)
    box = [state]
    flops = count_flops(lambda: fn(box[0], batch))

    def step():
        box[0], _ = compiled(box[0], batch)

    mats = {s: (torch.randn(s[0], s[1]), torch.randn(s[1], s[2])) for s in SHAPES}
    times = {"update": [], **{s: [] for s in SHAPES}}
    for _ in range(5):
        times["update"].append(median_us(step, 3, 50) / 1e6)
        for s, (x, y) in mats.items():
            times[s].append(median_us(lambda: torch.mm(x, y), 3, 200) / 1e6)
    update_s = statistics.median(times["update"])
    rates = {s: 2 * s[0] * s[1] * s[2] / statistics.median(times[s]) / 1e9 for s in SHAPES}
    best = max(rates.values())
    print(f"update {update_s * 1e3:.2f} ms, {flops / 1e6:.0f} MFLOP of products, "
          f"{flops / update_s / 1e9:.0f} GFLOP/s")
    for s, rate in rates.items():
        print(f"mm {s[0]}x{s[1]}x{s[2]}: {rate:.0f} GFLOP/s")
    print(f"the update at {100 * flops / update_s / 1e9 / best:.0f}% of the best rate measured "
          f"({best:.0f} GFLOP/s), at which its products take {flops / best * 1e3 / 1e9:.2f} ms")


if __name__ == "__main__":
    main()
