import csv
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import funcsac
from funcsac.driver.run import recorder

# driver settings that keep a training run to seconds
TINY = dict(hidden_sizes=(16, 16), batch_size=32, compile=False, progress=False,
            eval_episodes=1, log_every=100)


def eval_rows(run_dir):
    """The rows of a run's eval.csv, header included."""
    with open(run_dir / "eval.csv", newline="") as f:
        return list(csv.reader(f))


def make_batch(cfg: funcsac.SACConfig, batch_size: int = 32, seed: int = 0,
               terminated_fraction: float = 0.2) -> funcsac.Batch:
    """A random batch matching ``cfg`` (``uint8`` images for a config with ``image_shape``; with
    a ``state_dim``, dicts of them and a state vector)."""
    g = torch.Generator().manual_seed(seed)
    dt = cfg.dtype
    B = batch_size

    def observations():
        if cfg.state_dim:
            return {"pixels": torch.randint(0, 256, (B, *cfg.image_shape), generator=g,
                                            dtype=torch.uint8),
                    "state": torch.randn(B, cfg.state_dim, generator=g, dtype=dt)}
        if cfg.image_shape:
            return torch.randint(0, 256, (B, *cfg.image_shape), generator=g, dtype=torch.uint8)
        return torch.randn(B, cfg.obs_dim + cfg.privileged_dim, generator=g, dtype=dt)

    return funcsac.Batch(
        obs=observations(),
        action=torch.rand(B, cfg.act_dim, generator=g, dtype=dt) * 2 - 1,
        reward=torch.randn(B, generator=g, dtype=dt),
        next_obs=observations(),
        terminated=torch.rand(B, generator=g) < terminated_fraction,
    )


def small_config(**overrides) -> funcsac.SACConfig:
    kw = dict(obs_dim=5, act_dim=2, hidden_sizes=(16, 16))
    kw.update(overrides)
    return funcsac.SACConfig.of(**kw)


def crash_at_eval(monkeypatch, step):
    """Make the driver's evaluation at env step ``step`` or later raise, as a crash would;
    returns a function that undoes it."""
    real = recorder.evaluate

    def failing(*args, **kwargs):
        if args[-1] >= step:
            raise RuntimeError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(recorder, "evaluate", failing)
    return lambda: monkeypatch.setattr(recorder, "evaluate", real)


def crash_then_resume(config, run_dir, monkeypatch, step):
    """Train ``config`` in ``run_dir`` until the evaluation at env step ``step`` crashes it, then
    resume it to the end; returns the resumed run's ``TrainResult``."""
    undo = crash_at_eval(monkeypatch, step)
    with pytest.raises(RuntimeError, match="simulated crash"):
        funcsac.train(config, run_dir)
    undo()
    return funcsac.train(config, run_dir, resume=True)


def assert_preset_resumes_exactly(name, tmp_path, monkeypatch, **overrides) -> None:
    """The preset ``name`` (TINY's sizes, ``overrides`` over them) on Pendulum-v1 for 300 steps,
    crashed at its evaluation at 200 and resumed: the same evaluations and final state as a run
    that went through."""
    cfg = funcsac.TrainConfig(**{**funcsac.presets.preset(name), **TINY, "env_id": "Pendulum-v1",
                                 "total_steps": 300, "learning_starts": 100, "eval_every": 100,
                                 "checkpoint_every": 100, "seed": 2, **overrides})
    first = funcsac.train(cfg, tmp_path / "a")
    resumed = crash_then_resume(cfg, tmp_path / "b", monkeypatch, 200)
    assert eval_rows(tmp_path / "b") == eval_rows(tmp_path / "a")
    assert_states_equal(resumed.state, first.state)


def assert_states_equal(a, b) -> None:
    """Every tensor of two states is bit-identical."""
    for x, y in zip(torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(b)):
        assert torch.equal(x, y)


def with_horizons_and_weights(batch: funcsac.Batch, seed: int) -> funcsac.Batch:
    """``batch`` with random horizons in 1..3 and random weights in [0, 1) (from ``seed``)."""
    g = torch.Generator().manual_seed(seed)
    n, dt = len(batch.reward), batch.reward.dtype
    return batch._replace(horizon=torch.randint(1, 4, (n,), generator=g).to(dt),
                          weight=torch.rand(n, generator=g, dtype=dt))


# the backends a variant's compiled == eager test runs with: dynamo and AOTAutograd's graph (no
# graph break, no recompile, the traced numbers) in seconds; inductor's code, tens of seconds a
# variant, with the slow tests (tests/test_compile.py compiles SAC's update with inductor always)
BACKENDS = ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)]


def assert_compiled_equals_eager(cfg, batch_for, steps: int, rtol: float, atol: float,
                                 backend: str = "inductor"):
    """``steps`` updates of ``torch.compile(funcsac.update, fullgraph=True, backend=backend)``
    equal eager ones, state and metrics after every step, with no recompile; ``batch_for(step)``
    gives the batches. Returns the compiled run's last state."""
    import optree
    torch._dynamo.reset()
    compiled = torch.compile(funcsac.update, fullgraph=True, backend=backend)
    eager_state = compiled_state = funcsac.init_state(cfg, seed=0)
    close = lambda a, b: torch.testing.assert_close(a, b, rtol=rtol, atol=atol)  # noqa: E731
    with torch._dynamo.config.patch(error_on_recompile=True):
        for step in range(steps):
            batch = batch_for(step)
            eager_state, eager_metrics = funcsac.update(eager_state, batch)
            compiled_state, compiled_metrics = compiled(compiled_state, batch)
            optree.tree_map(close, (compiled_state, compiled_metrics),
                            (eager_state, eager_metrics), namespace="funcsac")
    return compiled_state


def reordered(dtype: torch.dtype = torch.float64) -> dict:
    """``rtol`` and ``atol`` for two computations of one formula whose floating-point operations
    run in another order: vmap against a loop, a batch of 1 against a batch of N, another
    implementation. Which order a CPU takes depends on its BLAS kernels (chosen by instruction
    set, shape and alignment), so no machine's result fixes the tolerance; an error bound does.

    Two orders of a sum of K products differ by at most 2 K eps sum|terms| (K <= 256 here, so
    about 500 eps of the terms' size); cancellation (batch normalisation's backward, a loss near
    its minimum) and Adam's division by sqrt(v) raise that relative to the result, to about 5e5
    eps in the worst case seen (CrossQ). ``sqrt(eps)`` (1.5e-8 in float64, 3.5e-4 in float32)
    lies above both, and far below what a fault gives (another agent's batch or key, a wrong
    index or sign: 1e-3 and more)."""
    tol = torch.finfo(dtype).eps ** 0.5
    return {"rtol": tol, "atol": tol}


def assert_vmap_equals_loop(cfg, batch_for, agents: int = 3) -> None:
    """One ``vmap(funcsac.update)`` over ``agents`` stacked states (seeds 0, 1, ...) equals an
    update of each alone (within ``reordered``); agent ``s`` gets ``batch_for(10 + s)``."""
    import optree
    tol = reordered(cfg.dtype)
    states = [funcsac.init_state(cfg, seed=s) for s in range(agents)]
    batches = [batch_for(10 + s) for s in range(agents)]
    stack = lambda xs: optree.tree_map(lambda *x: torch.stack(x), *xs, namespace="funcsac")  # noqa: E731
    together, metrics = torch.func.vmap(funcsac.update)(stack(states), stack(batches))
    for i, (s, b) in enumerate(zip(states, batches)):
        alone, alone_metrics = funcsac.update(s, b)
        optree.tree_map(lambda x, y: torch.testing.assert_close(x[i], y, **tol),
                        (together, metrics), (alone, alone_metrics), namespace="funcsac")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(world: int, rank: int, port: int) -> dict:
    """The environment torchrun gives rank ``rank`` of ``world`` CPU ranks (one thread each),
    with tests/ importable."""
    tests = str(Path(__file__).parent)
    return {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}


def torchrun(world: int, *args, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    """``args`` run by torchrun on ``world`` CPU ranks (one thread each), on a free port."""
    env = {k: v for k, v in rank_env(world, 0, 0).items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                           str(world), "--master-addr", "127.0.0.1", "--master-port",
                           str(free_port()), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
