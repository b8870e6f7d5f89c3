"""Latency of one observation (batch 1) through an exported policy, a 256x256 actor on one
thread: the ``torch.export`` program, an onnxruntime session and, for comparison, the module
before export and ``Agent.act``.
``python -m bench.studies.export_latency`` prints a markdown table of median microseconds per
call."""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import functools
import tempfile
from pathlib import Path

import numpy as np
import torch

import funcsac
from funcsac.driver.run.agents import AgentSpec
from funcsac.driver.envs.spec import EnvSpec
from funcsac.driver.tools.export import export_policy, policy_module
from funcsac.driver.tools.load import Agent
from bench.common.measure import median_us

SHAPES = {"Pendulum (obs 3, act 1)": (3, 1), "HalfCheetah (obs 17, act 6)": (17, 6)}
HIDDEN = (256, 256)
WARMUP, CALLS = 200, 2000


def make_agent(obs_dim: int, act_dim: int, folder: Path) -> Agent:
    """A freshly initialised agent with a ``HIDDEN`` actor and bounds [-1, 1]."""
    cfg = funcsac.SACConfig(obs_dim=obs_dim, act_dim=act_dim, hidden_sizes=HIDDEN)
    spec = EnvSpec(obs_dim, act_dim, -np.ones(act_dim), np.ones(act_dim))
    return Agent(funcsac.init_state(cfg, seed=0), funcsac.TrainConfig(hidden_sizes=HIDDEN), spec,
                 [AgentSpec(0, {})], 0, folder)


def latencies(obs_dim: int, act_dim: int, folder: Path) -> dict:
    """Median microseconds per batch-1 call of each way to act."""
    import onnxruntime

    agent = make_agent(obs_dim, act_dim, folder)
    obs = np.random.default_rng(0).standard_normal((1, obs_dim)).astype(np.float32)
    obs_t = torch.from_numpy(obs)
    module = policy_module(agent)
    program = torch.export.load(export_policy(agent, folder / "p.pt2", "torch-export")).module()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(export_policy(agent, folder / "p.onnx", "onnx")),
                                           options, providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(["action"], {"obs": obs})[0], agent.act(obs),
                               rtol=0, atol=1e-5)
    with torch.no_grad():
        np.testing.assert_allclose(program(obs_t).numpy(), agent.act(obs), rtol=0, atol=1e-5)
        median = functools.partial(median_us, warmup=WARMUP, calls=CALLS)
        return {"torch.export": median(lambda: program(obs_t)),
                "policy_module (eager)": median(lambda: module(obs_t)),
                "onnxruntime": median(lambda: session.run(["action"], {"obs": obs})),
                "Agent.act (numpy)": median(lambda: agent.act(obs)),
                "Agent.act (tensor)": median(lambda: agent.act(obs_t))}


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


if __name__ == "__main__":
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        rows = {name: latencies(*dims, Path(tmp)) for name, dims in SHAPES.items()}
    methods = list(next(iter(rows.values())))
    print(f"Median latency per call at batch 1, us ({cpu_model()}, 1 thread, actor "
          f"{'x'.join(map(str, HIDDEN))}, {CALLS} calls after {WARMUP}):\n")
    print("| shape | " + " | ".join(methods) + " |")
    print("|---|" + "---:|" * len(methods))
    for name, values in rows.items():
        print(f"| {name} | " + " | ".join(f"{values[m]:.1f}" for m in methods) + " |")
