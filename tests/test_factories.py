"""Networks from the user's own file in a training run (--actor-factory, --critic-factory): the
run builds them, the compile child would build the same step, load and export rebuild them, and
bad names are refused with what was wrong."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import funcsac
from funcsac.accel.compile.stored import artifact_key
from funcsac.driver.cli import main
from funcsac.driver.factories import import_factory
from funcsac.driver.run.compiled_step import build_request, requested_steps

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "my_nets.py"
FLAGS = ["--total-steps", "60", "--learning-starts", "30", "--batch-size", "8",
         "--hidden-sizes", "8", "8", "--eval-every", "0", "--eval-episodes", "1",
         "--checkpoint-every", "0", "--no-compile", "--no-progress"]


def test_a_run_trains_loads_and_exports_networks_from_the_users_file(tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLE.parent)  # a relative FILE.py, as a user types it
    run = tmp_path / "run"
    assert main(["train", "--run-dir", str(run), "--actor-factory", "my_nets.py:actor",
                 "--critic-factory", "my_nets.py:critic", *FLAGS]) == 0
    saved = json.loads((run / "config.json").read_text())
    # kept absolute, so that load, a resume or a Tune trial elsewhere finds the file
    assert (saved["actor_factory"], saved["critic_factory"]) == (f"{EXAMPLE}:actor",
                                                                 f"{EXAMPLE}:critic")
    monkeypatch.chdir(tmp_path)
    agent = funcsac.load(run)
    # the file's networks (Linear, LayerNorm, SiLU; two hidden layers), not the default MLP
    assert agent.state.actor["1.weight"].shape == (8,)  # the first LayerNorm
    assert agent.state.critic["6.weight"].shape == (2, 1, 8)  # 2 critics' heads
    assert agent.state.step.item() == 60 - 30 + 1
    obs = np.zeros((4, 3), dtype=np.float32)
    action = agent.act(obs)
    assert action.shape == (4, 1) and np.all(np.abs(action) <= 2.0)
    pytest.importorskip("onnxruntime")
    out = tmp_path / "policy.onnx"
    assert main(["export", str(run), "--format", "onnx", "--out", str(out)]) == 0
    import onnxruntime
    session = onnxruntime.InferenceSession(str(out))
    exported = session.run(None, {session.get_inputs()[0].name: obs})[0]
    np.testing.assert_allclose(exported, action, rtol=1e-5, atol=1e-6)


def test_the_compile_child_builds_the_same_step(tmp_path):
    """The child process imports the factories from the run's settings and arrives at the same
    store key as the run (else it would build another step than the run's)."""
    config = funcsac.TrainConfig(actor_factory=f"{EXAMPLE}:actor",
                                 critic_factory=f"{EXAMPLE}:critic", hidden_sizes=(8, 8),
                                 batch_size=8)
    from funcsac.driver.envs.spec import EnvSpec
    spec = EnvSpec(obs_dim=3, act_dim=1, low=np.array([-2.0]), high=np.array([2.0]))
    request = build_request(config, spec, {})
    fns, args = requested_steps(request)
    (name, fn), = fns.items()
    key = artifact_key(fn, args, name)
    (tmp_path / "request.json").write_text(json.dumps(request))
    child = subprocess.run([sys.executable, "-c", (
        "import json, sys\n"
        "from funcsac.accel.compile.stored import artifact_key\n"
        "from funcsac.driver.run.compiled_step import requested_steps\n"
        "fns, args = requested_steps(json.load(open(sys.argv[1])))\n"
        "print(*(artifact_key(fn, args, name) for name, fn in fns.items()))"),
        str(tmp_path / "request.json")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == key
    # and another network is another key
    other = funcsac.TrainConfig(hidden_sizes=(8, 8), batch_size=8)
    fns, args = requested_steps(build_request(other, spec, {}))
    assert artifact_key(fns[name], args, name) != key


def test_python_modules_are_named_as_imported():
    factory = import_factory("funcsac.architectures:mlp", "critic_factory")
    assert factory is funcsac.architectures.mlp


@pytest.mark.parametrize("name, message", [
    ("my_nets", r"must be '' \(the default networks\) or 'MODULE:FUNCTION' or "
                r"'FILE.py:FUNCTION' \(such as 'my_nets.py:make_actor'\), got 'my_nets'"),
    ("my_nets.py:", r"must be '' .* got 'my_nets.py:'"),
    ("nowhere.py:actor", r"actor_factory: no file .*nowhere.py \(from 'nowhere.py:actor'; a "
                         r"relative path is taken from the working directory"),
    (f"{EXAMPLE}:nothing", r"actor_factory: my_nets has no function 'nothing'"),
    ("funcsac_no_such_module:actor", r"actor_factory: cannot import 'funcsac_no_such_module'"),
    ("math:pi", r"actor_factory: math has no function 'pi'"),
])
def test_bad_factory_names_are_refused(name, message):
    with pytest.raises(ValueError, match=message):
        funcsac.TrainConfig(actor_factory=name).sac_config(3, 1)


def test_a_file_named_as_an_imported_module_is_refused(tmp_path):
    (tmp_path / "json.py").write_text("def actor(*args):\n    return None\n")
    with pytest.raises(ValueError, match=r"a module named 'json' is already imported from .*; "
                                         "rename the file"):
        import_factory(f"{tmp_path / 'json.py'}:actor", "actor_factory")


def test_the_default_networks_stay_without_a_factory():
    cfg = funcsac.TrainConfig().sac_config(3, 1)
    assert cfg.actor_factory is None and cfg.critic_factory is None
    assert isinstance(funcsac.init_state(cfg, seed=0).actor["0.weight"], torch.Tensor)
