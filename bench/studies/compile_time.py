"""Seconds to reach the first compiled ``funcsac.update`` of a workload in a new process, as
``funcsac train`` does it (``compile_stored``): ``python -m bench.studies.compile_time mujoco
cpu`` prints the first call's seconds, a cold compile with empty inductor caches and compile
store, and a warm one when an earlier process filled them."""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import os
import subprocess
import sys
import tempfile
from bench.common.paths import child_env, python_module


def _first_call_in_new_process(workload: str, device, env) -> float:
    done = subprocess.run([*python_module(__spec__.name), workload, str(device)], check=True,
                          capture_output=True, text=True, env=child_env(env))
    return float(done.stdout.split()[-1])


def new_process_compile_s(workload: str, device):
    """``(cold, warm)``: two new processes sharing new, initially empty caches."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache,
               "FUNCSAC_COMPILE_STORE": os.path.join(cache, "funcsac")}
        return tuple(_first_call_in_new_process(workload, device, env) for _ in range(2))


if __name__ == "__main__":
    import torch

    import funcsac
    from bench.common.measure import call_s
    from bench.common.workloads import random_batch, workload_config

    cfg = workload_config(sys.argv[1], device=sys.argv[2])
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg)
    device = torch.device(sys.argv[2])
    print(call_s(lambda: funcsac.compile_stored(funcsac.update, (state, batch), "bench-update")(
        state, batch), device))
