"""Where a warm ``funcsac train`` step goes: the compiled gradient step, the batch sampling and the
collect stage, each timed inside the run (medians of the last 2,000 steps):
``python bench/driver_step.py [TOTAL_STEPS] [--background]`` (``gemm_share.py`` times the same
update in a tight loop).

The run waits for its compiled update (from the compile store, or compiled first), so every
gradient step timed is a compiled one; ``--background``: a store without it has it built by the
background child, as a cold ``funcsac train`` does, while the run steps eagerly (the medians are
of the last steps, compiled ones).
"""
import mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import statistics
import sys
import time

import funcsac
from funcsac.driver.run import collector, learner


def timed(times: list, fn):
    def wrapper(*args):
        start = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - start)
        return out
    return wrapper


def main(total_steps: int, background: bool) -> None:
    times = {"step": [], "sample": [], "collect": []}
    learner.Learner.sample = timed(times["sample"], learner.Learner.sample)
    collector.Collector.collect = timed(times["collect"], collector.Collector.collect)
    function = learner.CompiledStep.function
    learner.CompiledStep.function = lambda self, name: timed(times["step"], function(self, name))
    config = funcsac.TrainConfig(env_id="Pendulum-v1", total_steps=total_steps,
                                 learning_starts=1000, eval_every=0, checkpoint_every=0,
                                 progress=False, compile_in_background=background)
    funcsac.train(config, "runs/driver_step", overwrite=True)
    for name, values in times.items():
        print(f"{name}: median {statistics.median(values[-2000:]) * 1e3:.3f} ms")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--background"]
    main(int(args[0]) if args else 4000, "--background" in sys.argv)
