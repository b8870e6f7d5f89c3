"""One SAC update (critic, actor and temperature steps, polyak average, Adam) per implementation
and workload, side by side in one run:

    pytest bench/benchmarks/test_update.py --benchmark-only \
        --benchmark-json bench/results/results.json

Implementations: funcsac eager and compiled (default, ``max-autotune-no-cudagraphs``, and on CUDA
``reduce-overhead``), funcsac as ``funcsac train`` compiles it (``stored``: ``compile_stored``),
the CleanRL-style imperative update (``imperative_sac.py``) eager and compiled, TorchRL's
``SACLoss`` + Adam + ``SoftUpdate`` (``torchrl_sac.py``) eager and compiled, and the same update
in JAX/flax/optax, jitted (``jax_sac.py``); the last two need the ``bench`` extra.
``extra_info`` holds the first call's time with empty compile caches (the cold compile), for
funcsac stored the cold and warm compiles of new processes (``compile_time.py``), the peak memory
of one update (torch allocations only) and its matmul FLOPs.
"""
import pytest
import torch

import funcsac
from bench.studies.compile_time import new_process_compile_s
from bench.peers.imperative_sac import ImperativeSAC
from bench.common.measure import (cold_first_call_s, count_flops, matmul_gflops, peak_step_mib,
                                  synced)
from bench.common.workloads import WORKLOADS, batch_fields, random_batch, stepper, workload_config

IMPLEMENTATIONS = ["imperative-eager", "imperative-compiled", "torchrl-eager", "torchrl-compiled",
                   "jax-jit",
                   "funcsac-eager", "funcsac-compiled", "funcsac-stored", "funcsac-max-autotune",
                   "funcsac-reduce-overhead"]
FUNCSAC_MODES = {"eager": None, "compiled": "default", "max-autotune": "max-autotune-no-cudagraphs",
                 "reduce-overhead": "reduce-overhead"}


def _funcsac_step(cfg, batch, variant):
    state = funcsac.init_state(cfg, seed=0)
    if variant == "stored":  # as funcsac train compiles: at the first call, kept on disk
        compiled = []

        def stored(s, b):
            if not compiled:
                compiled.append(funcsac.compile_stored(funcsac.update, (s, b), "bench-update"))
            return compiled[0](s, b)
        return stepper(stored, state, batch)
    mode = FUNCSAC_MODES[variant]
    fn = funcsac.update if mode is None else funcsac.compile_update(mode=mode)
    return stepper(fn, state, batch)


def _module_step(impl, cfg, batch):
    torch.manual_seed(0)
    sizes = (cfg.obs_dim, cfg.act_dim, cfg.hidden_sizes, cfg.num_critics, cfg.num_target_critics)
    fields = batch_fields(batch)
    if impl == "jax-jit":
        if cfg.device != "cpu":
            pytest.skip("the JAX reference runs on the CPU build of jax")
        jax_sac = pytest.importorskip("bench.peers.jax_sac", exc_type=ImportError)
        sac = jax_sac.JaxSAC(*sizes)
        args = jax_sac.numpy_batch(*fields)
        return lambda: sac.update(*args)
    if impl.startswith("torchrl"):
        torchrl_sac = pytest.importorskip("bench.peers.torchrl_sac", exc_type=ImportError)
        sac = torchrl_sac.TorchRLSAC(*sizes, device=cfg.device)
        args = (torchrl_sac.tensordict_batch(*fields),)
    else:
        sac, args = ImperativeSAC(*sizes, device=cfg.device), fields
    fn = torch.compile(sac.update) if impl.endswith("compiled") else sac.update
    return lambda: fn(*args)


def make_step(impl, workload, device):
    """A no-argument function running one update of ``impl`` on ``workload`` (a fresh agent)."""
    cfg = workload_config(workload, device=str(device))
    batch = random_batch(cfg)
    family, variant = impl.split("-", 1)
    if family == "funcsac":
        return _funcsac_step(cfg, batch, variant)
    return _module_step(impl, cfg, batch)


def prepare(impl, workload, device):
    """``(step, extra_info)``: ``impl`` built, compiled from empty caches and warmed up."""
    step = make_step(impl, workload, device)
    info = {"workload": workload, "impl": impl, "device": str(device),
            "first_call_s": cold_first_call_s(step, device)}
    if impl == "funcsac-stored":
        info["new_process_cold_s"], info["warm_compile_s"] = new_process_compile_s(workload, device)
    for _ in range(10):
        step()
    info["peak_mib"] = peak_step_mib(step, device)
    same_math = "funcsac" if impl == "jax-jit" else impl.split("-")[0]  # counted in torch
    info["flops"] = count_flops(make_step(same_math + "-eager", workload, device))
    return step, info


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_update(benchmark, workload, impl, device):
    if impl.endswith("reduce-overhead") and device.type != "cuda":
        pytest.skip("CUDA graphs need a CUDA device")
    # One compiled function at a time: a second torch.compile of the same code adds its guards
    # to every call of the first (0.4 ms per funcsac update measured at small sizes).
    torch._dynamo.reset()
    step, info = prepare(impl, workload, device)
    benchmark.extra_info.update(info)
    benchmark.group = workload
    benchmark.pedantic(synced(step, device), rounds=100, iterations=1, warmup_rounds=3)


def test_matmul_peak(benchmark, device):
    """The machine's fp32 matmul throughput: the best of three square sizes."""
    best = max((matmul_gflops(device, n), n) for n in (256, 512, 1024))
    benchmark.extra_info.update(workload="machine", gflops=best[0], size=best[1],
                                device=str(device))
    a = torch.randn(best[1], best[1], device=device)
    benchmark.group = "machine"
    benchmark.pedantic(torch.mm, args=(a, a), rounds=20, iterations=1, warmup_rounds=3)
