"""Seconds to compile ``funcsac.update`` for a workload in a new process. Run with the inductor
cache of an earlier compile (``TORCHINDUCTOR_CACHE_DIR``), this is the warm start a user sees on
the next run: ``python bench/warm_compile.py mujoco cpu``."""
import subprocess
import sys


def warm_compile_s(workload: str, device) -> float:
    """The first call's seconds in a fresh Python process sharing this process's cache dir."""
    done = subprocess.run([sys.executable, __file__, workload, str(device)], check=True,
                          capture_output=True, text=True)
    return float(done.stdout.split()[-1])


if __name__ == "__main__":
    import torch

    import funcsac
    from measure import first_call_s
    from workloads import random_batch, workload_config

    cfg = workload_config(sys.argv[1], device=sys.argv[2])
    state, batch = funcsac.init_state(cfg, seed=0), random_batch(cfg)
    update = torch.compile(funcsac.update, fullgraph=True)
    print(first_call_s(lambda: update(state, batch), torch.device(sys.argv[2])))
