"""Without any optional package funcsac imports, shows its help and trains Pendulum-v1; each
feature that needs one says in one line which extra to install.

The packages are made unimportable (``sys.modules[name] = None``) in a fresh process, as a bare
``pip install funcsac`` leaves them."""
import json
import subprocess
import sys
import textwrap

import pytest

OPTIONAL = ["mujoco", "Box2D", "tensorboard", "wandb", "ray", "onnx", "onnxscript",
            "onnxruntime", "moviepy", "minari", "sbx", "stable_baselines3", "torchrl", "jax",
            "dm_control", "shimmy", "pygame"]

SCRIPT = textwrap.dedent("""
    import contextlib, io, json, sys, tempfile
    for name in OPTIONAL:
        sys.modules[name] = None
    import funcsac
    from funcsac.driver.cli import main

    def run(argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code
        return code, err.getvalue()

    out, tmp = {}, tempfile.mkdtemp()
    tiny = ["--total-steps", "300", "--learning-starts", "100", "--batch-size", "32",
            "--hidden-sizes", "16", "16", "--no-compile", "--eval-every", "0",
            "--eval-episodes", "1", "--no-progress"]
    out["help"] = run(["--help"])
    out["train"] = run(["train", "--run-dir", tmp + "/run"] + tiny)
    out["mujoco"] = run(["train", "--run-dir", tmp + "/hc", "--env-id", "HalfCheetah-v5"] + tiny)
    out["wandb"] = run(["train", "--run-dir", tmp + "/wb", "--wandb-project", "p"] + tiny)
    out["dmc"] = run(["train", "--run-dir", tmp + "/dmc", "--env-id",
                      "dm_control/cheetah-run-v0"] + tiny)
    out["tune"] = run(["tune", "--storage", tmp + "/tune", "--search",
                      "actor_lr=loguniform(1e-4,1e-3)"] + tiny)
    out["pixels"] = run(["train", "--run-dir", tmp + "/px", "--pixels", "--image-size", "32"]
                        + tiny)
    out["video"] = run(["evaluate", tmp + "/run", "--episodes", "1", "--video", tmp + "/v"])
    out["onnx"] = run(["export", tmp + "/run", "--format", "onnx", "--out", tmp + "/p.onnx"])
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def bare():
    """What each command returned (exit code, stderr) with every optional package missing."""
    script = f"OPTIONAL = {OPTIONAL!r}\n" + SCRIPT
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_imports_helps_and_trains_without_optional_packages(bare):
    assert bare["help"][0] == 0
    assert bare["train"][0] == 0, bare["train"][1]


@pytest.mark.parametrize("feature,extra", [("mujoco", "mujoco"), ("dmc", "dmc"), ("wandb", "wandb"),
                                           ("tune", "tune"), ("video", "video"),
                                           ("onnx", "export"), ("pixels", "pixels")])
def test_a_missing_extra_is_named_in_one_line(bare, feature, extra):
    code, stderr = bare[feature]
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1, stderr
    assert f"pip install 'funcsac[{extra}]'" in lines[0], stderr
