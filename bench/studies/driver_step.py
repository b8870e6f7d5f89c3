"""Where a warm ``funcsac train`` step goes: the compiled gradient step, the batch sampling and the
collect stage, split into acting (the policy's forward and its checks), the environment's step,
the replay buffer's write and the rest (the bookkeeping), each timed inside the run (medians of
the last 2,000 steps; the rest per step):
``python -m bench.studies.driver_step [TOTAL_STEPS] [--background]`` (``gemm_share.py`` times
the same update in a tight loop).

The run waits for its compiled update (from the compile store, or compiled first), so every
gradient step timed is a compiled one; ``--background``: a store without it has it built by the
background child, as a cold ``funcsac train`` does, while the run steps eagerly (the medians are
of the last steps, compiled ones).
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import statistics
import sys
import time

import funcsac
from funcsac.driver.run import collector, learner


def timed(times: list, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
        return out
    return wrapper


def main(total_steps: int, background: bool) -> None:
    times = {"step": [], "sample": [], "collect": [], "act": [], "env": [], "store": []}
    learner.Learner.sample = timed(times["sample"], learner.Learner.sample)
    collector.Collector.collect = timed(times["collect"], collector.Collector.collect)
    collector.act = timed(times["act"], collector.act)
    collector.step_env = timed(times["env"], collector.step_env)
    collector.Collector._store = timed(times["store"], collector.Collector._store)
    function = learner.CompiledStep.function
    learner.CompiledStep.function = lambda self, name: timed(times["step"], function(self, name))
    config = funcsac.TrainConfig(env_id="Pendulum-v1", total_steps=total_steps,
                                 learning_starts=1000, eval_every=0, checkpoint_every=0,
                                 progress=False, compile_in_background=background)
    funcsac.train(config, "runs/driver_step", overwrite=True)
    last = {name: values[-2000:] for name, values in times.items()}
    # every collect step after the learning starts acts, steps and stores once
    last["rest"] = [c - a - e - s for c, a, e, s in zip(
        last["collect"], last["act"], last["env"], last["store"])]
    for name, values in last.items():
        unit, scale = ("us", 1e6) if name in ("act", "env", "store", "rest") else ("ms", 1e3)
        print(f"{name}: median {statistics.median(values) * scale:.3f} {unit}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--background"]
    main(int(args[0]) if args else 4000, "--background" in sys.argv)
