"""Seconds to compile ``funcsac.update`` for a workload in a new process, as a user meets it:
``python bench/compile_time.py mujoco cpu`` prints the first call's seconds, a cold compile with an
empty ``TORCHINDUCTOR_CACHE_DIR`` and a warm one when an earlier run filled it."""
import os
import subprocess
import sys
import tempfile


def _first_call_in_new_process(workload: str, device, env) -> float:
    done = subprocess.run([sys.executable, __file__, workload, str(device)], check=True,
                          capture_output=True, text=True, env=env)
    return float(done.stdout.split()[-1])


def new_process_compile_s(workload: str, device):
    """``(cold, warm)``: two new processes sharing a new, initially empty inductor cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        return tuple(_first_call_in_new_process(workload, device, env) for _ in range(2))


if __name__ == "__main__":
    import torch

    import funcsac
    from measure import call_s
    from workloads import random_batch, workload_config

    cfg = workload_config(sys.argv[1], device=sys.argv[2])
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg)
    update = torch.compile(funcsac.update, fullgraph=True)
    print(call_s(lambda: update(state, batch), torch.device(sys.argv[2])))
