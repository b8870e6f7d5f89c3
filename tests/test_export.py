"""Exported policies: the agent's deterministic actions from a file, without funcsac."""
import dataclasses
import logging
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import funcsac
from funcsac.driver.cli import main
from funcsac.driver.run.agents import stack
from funcsac.driver.tools.export import export_policy, policy_module
from helpers import TINY, reordered

# loads an exported policy where funcsac cannot be imported and writes its actions for
# FOLDER/obs{B}.npz (its arrays: "obs", or a dict observation's entries) to
# FOLDER/action{B}.npy; argv: FORMAT PATH FOLDER
LOAD_WITHOUT_FUNCSAC = """
import sys; sys.modules["funcsac"] = None
try:
    import funcsac  # noqa: F401
except ImportError:
    pass
else:
    raise AssertionError("funcsac is importable")
import numpy as np
fmt, path, folder = sys.argv[1:]
if fmt == "torch-export":
    import torch
    policy = torch.export.load(path).module()
    def run(obs):
        obs = {k: torch.from_numpy(x) for k, x in obs.items()}
        with torch.no_grad():
            return policy(obs["obs"] if list(obs) == ["obs"] else obs).numpy()
else:
    import onnxruntime
    session = onnxruntime.InferenceSession(path)
    def run(obs):
        return session.run(["action"], obs)[0]
for b in (1, 7):
    np.save(f"{folder}/action{b}.npy", run(dict(np.load(f"{folder}/obs{b}.npz"))))
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("run")
    # observation normalisation on: the exported policy must apply the running statistics
    funcsac.train(funcsac.TrainConfig(total_steps=300, learning_starts=100, eval_every=0,
                                      normalize_obs=True, **TINY),
                  path)
    return path


@pytest.fixture(scope="module")
def agent(run_dir):
    return funcsac.load(run_dir)


def _check_without_funcsac(agent, path, fmt, folder):
    """The exported file's actions, computed in a process without funcsac, equal ``agent.act``."""
    rng = np.random.default_rng(0)
    expected = {}
    shapes = agent.spec.obs_shape
    shapes = shapes if isinstance(shapes, dict) else {"obs": shapes}
    for b in (1, 7):
        obs = {k: rng.integers(0, 256, (b, *shape), dtype=np.uint8) if len(shape) == 3
               else (rng.standard_normal((b, *shape)) * 2).astype(np.float32)
               for k, shape in shapes.items()}
        np.savez(folder / f"obs{b}.npz", **obs)
        expected[b] = agent.act(obs["obs"] if list(obs) == ["obs"] else obs)
    subprocess.run([sys.executable, "-c", LOAD_WITHOUT_FUNCSAC, fmt, str(path), str(folder)],
                   check=True)
    for b in (1, 7):
        action = np.load(folder / f"action{b}.npy")
        assert action.shape == (b, agent.spec.act_dim) and action.dtype == expected[b].dtype
        np.testing.assert_allclose(action, expected[b], **reordered(torch.float32))


def test_torch_export_runs_without_funcsac(agent, tmp_path):
    path = export_policy(agent, tmp_path / "policy.pt2", "torch-export")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.pt2"]  # no temporary file left
    _check_without_funcsac(agent, path, "torch-export", tmp_path)


def test_onnx_runs_without_funcsac(agent, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    path = export_policy(agent, tmp_path / "policy.onnx", "onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.onnx"]  # weights inside
    _check_without_funcsac(agent, path, "onnx", tmp_path)


class TwoHeads(nn.Module):
    """A custom actor that ``apply_actor`` runs through ``functional_call``."""

    def __init__(self, obs_dim, act_dim, hidden_sizes):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden_sizes[0]), nn.Tanh())
        self.mean = nn.Linear(hidden_sizes[0], act_dim)
        self.log_std = nn.Linear(hidden_sizes[0], act_dim)

    def forward(self, obs):
        h = self.trunk(obs)
        return torch.cat([self.mean(h), self.log_std(h)], dim=-1)


def test_an_onnx_export_says_nothing_of_packages_funcsac_does_not_use(agent, tmp_path, caplog,
                                                                      recwarn):
    """No notes on torchvision's operators (torch.onnx's logger), no deprecation from torch's
    own pytree code."""
    pytest.importorskip("onnxscript")
    caplog.set_level(logging.INFO)
    export_policy(agent, tmp_path / "policy.onnx", "onnx")
    assert "torchvision" not in caplog.text
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]


def test_custom_actor_runs_without_funcsac(agent, tmp_path):
    cfg = funcsac.SACConfig(obs_dim=agent.spec.obs_dim, act_dim=agent.spec.act_dim,
                            hidden_sizes=(8,), actor_factory=TwoHeads)
    custom = dataclasses.replace(agent, state=funcsac.init_state(cfg, seed=3))
    path = export_policy(custom, tmp_path / "policy.pt2", "torch-export")
    _check_without_funcsac(custom, path, "torch-export", tmp_path)


def test_a_bf16_agent_exports_with_float32_products(agent, tmp_path):
    """ONNX Runtime has no bfloat16 Gemm on a CPU: the exported policy takes float32 products,
    within bfloat16's rounding of the agent's own actions (``6 L u`` relative over ``L``
    products, as tests/test_precision.py derives) and exactly as the fp32 agent's."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    cfg = dataclasses.replace(agent.state.config, precision="bf16")
    agent16 = dataclasses.replace(agent, state=funcsac.init_state(cfg, seed=1))
    agent32 = dataclasses.replace(agent, state=funcsac.init_state(
        dataclasses.replace(cfg, precision="fp32"), seed=1))
    path = export_policy(agent16, tmp_path / "policy.onnx", "onnx")
    _check_without_funcsac(agent32, path, "onnx", tmp_path)
    obs = np.random.default_rng(1).standard_normal((5, cfg.obs_dim)).astype(np.float32)
    with torch.no_grad():
        action = policy_module(agent16)(torch.from_numpy(obs)).numpy()
    layers = len(cfg.hidden_sizes) + 1
    scale = np.abs(agent.spec.high).max()
    np.testing.assert_allclose(action, agent16.act(obs), rtol=0, atol=6 * layers * 2**-8 * scale)


def test_float64_agent_takes_float32_obs(agent):
    cfg = agent.state.config
    state = funcsac.init_state(dataclasses.replace(cfg, dtype=torch.float64), seed=1)
    agent64 = dataclasses.replace(agent, state=state)
    obs = np.random.default_rng(1).standard_normal((5, cfg.obs_dim)).astype(np.float32)
    with torch.no_grad():
        action = policy_module(agent64)(torch.from_numpy(obs)).numpy()
    assert action.dtype == np.float32
    np.testing.assert_allclose(action, agent64.act(obs), **reordered(torch.float32))


def test_several_agents_need_an_index(agent):
    two = dataclasses.replace(agent, state=stack([agent.state, agent[0].state]),
                              agent_specs=agent.agent_specs * 2)
    with pytest.raises(ValueError, match=r"2 agents.*agent\[i\]"):
        policy_module(two)
    with pytest.raises(ValueError, match="agent index 2 out of range"):
        policy_module(two, agent_index=2)
    obs = torch.randn(4, agent.spec.obs_dim)
    with torch.no_grad():
        torch.testing.assert_close(policy_module(two, agent_index=-1)(obs),
                                   torch.from_numpy(agent.act(obs.numpy())), rtol=0, atol=1e-6)


def test_cli_export(run_dir, tmp_path, capsys):
    out = tmp_path / "policy.pt2"
    assert main(["export", str(run_dir), "--format", "torch-export", "--out", str(out)]) == 0
    assert out.is_file() and f"wrote {out}" in capsys.readouterr().out


def test_cli_export_errors(run_dir, tmp_path, capsys):
    out = tmp_path / "policy.pt2"
    assert main(["export", str(run_dir), "--format", "tflite", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown export format 'tflite'" in err and "torch-export, onnx" in err
    assert main(["export", str(tmp_path), "--format", "onnx", "--out", str(out)]) == 2
    assert f"{tmp_path} holds no funcsac run" in capsys.readouterr().err
    (tmp_path / "notes").write_text("a file")
    assert main(["export", str(run_dir), "--format", "torch-export",
                 "--out", str(tmp_path / "notes" / "p.pt2")]) == 2
    assert f"{tmp_path / 'notes'} is a file, not a folder" in capsys.readouterr().err
    assert not out.exists()
    # a missing folder is made
    assert main(["export", str(run_dir), "--format", "torch-export",
                 "--out", str(tmp_path / "new" / "p.pt2")]) == 0
    assert (tmp_path / "new" / "p.pt2").is_file()


def test_onnx_without_the_extra(agent, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxscript", None)
    with pytest.raises(ValueError, match=r"pip install 'funcsac\[export\]'"):
        export_policy(agent, tmp_path / "policy.onnx", "onnx")
