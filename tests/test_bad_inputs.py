"""Bad input of every kind gets a ValueError (exit code 2 from the CLI) that names what was wrong,
and loses nothing already written. README.md's table of bad inputs lists these cases."""
import math
import re
import shutil

import pytest
import torch

import funcsac
import toy_envs  # noqa: F401  (registers the funcsac-test/ envs)
from funcsac.driver.cli import main
from funcsac.driver.config import settings
from funcsac.driver.run.checkpoint import CheckpointError, load_checkpoint
from helpers import make_batch, small_config

NAN = math.nan

# an out-of-range value of each TrainConfig field (bool fields have no range)
OUT_OF_RANGE = {
    "env_id": "", "total_steps": 0, "seed": -1, "num_seeds": 0, "sweep": "gamma",
    "num_envs": 0, "autoreset_mode": "never", "buffer_size": 0, "batch_size": 0,
    "learning_starts": -1, "utd": 0, "gradient_steps": 0, "eval_every": -1, "eval_episodes": 0,
    "checkpoint_every": -1, "log_every": 0, "device": "nonsense", "dtype": "float16",
    "hidden_sizes": (0,), "num_critics": 0, "num_target_critics": 3, "gamma": 1.5, "tau": -0.1,
    "actor_lr": -1.0, "critic_lr": -1.0, "alpha_lr": -1.0, "init_alpha": 0.0,
    "target_entropy": math.inf, "policy_delay": 0, "target_update_every": 0,
    "max_grad_norm": 0.0, "weight_decay": -1.0,
    "adam_betas": (0.9, 1.0), "adam_eps": -1.0, "log_std_min": 3.0, "log_std_max": -6.0,
    "actor_q_reduction": "max", "target_q_reduction": "max", "critic_dropout": 1.0,
    "weight_decay_on": "biases",
    "wandb_project": "team/project", "wandb_mode": "cloud", "n_step": 0, "priority_alpha": -0.1,
    "priority_beta": 1.5, "priority_epsilon": 0.0, "offline_ratio": 1.0, "algorithm": "ppo",
    "num_quantiles": 0, "drop_quantiles": 25,
    "offline_data": "data\0.npz",  # a missing file is refused when the run starts (test_offline)
    "network": "resnet", "encoder": "vit", "actor_hidden_sizes": (0,), "reset_every": -1,
    "alpha_adam_betas": (0.9, 1.0), "target_entropy_scale": math.inf,
    "image_size": 0, "frame_stack": 0, "image_features": 0, "image_pad": -1,
    "encoder_tau_scale": 0.0, "action_repeat": 0, "reset_at": (0,), "pessimism": math.inf,
    "kl_target": 0.0, "std_multiplier": 0.0, "init_optimism": 0.0, "init_kl_weight": 1e9,
    "adjustment_lr": -1.0, "log_std_squash": "sigmoid", "weight_init": "zeros", "precision": "fp16",
    "views": 0, "num_bins": 1, "v_min": math.inf, "v_max": math.nan, "return_bound": 0.0,
    "lr_decay_to": 1.5, "lr_decay_steps": 0, "lr_decay_shape": "step", "c_shift": -3.0,
    "scalers": "flax", "actor_heads": 0, "noise_hold": -1.0, "noise_hold_max": 0,
    "actor_factory": "nets.py", "critic_factory": "nets:", "encoder_factory": ":encoder",
    "policy_head": "mlp",
}
# every setting by flat name, the variants' options among them: (type, default, help)
FIELDS = settings()
# an option is checked with its variant chosen
CHOSEN = {"num_quantiles": {"algorithm": "tqc"}, "drop_quantiles": {"algorithm": "tqc"},
          **{name: {"algorithm": "bro", "network": "bronet"} for name in (
              "pessimism", "kl_target", "std_multiplier", "init_optimism", "init_kl_weight",
              "adjustment_lr")},
          **{name: {"network": "simbav2"} for name in ("c_shift", "actor_heads", "scalers")},
          "policy_head": {"network": "flashsac"}}


def _wrong_type(name):
    default = FIELDS[name][1]
    if isinstance(default, bool):
        return "yes"
    if isinstance(default, str):
        return 5
    if isinstance(default, tuple):
        return 5
    return "1"


CASES = ([(name, "out of range", v) for name, v in OUT_OF_RANGE.items() if name in FIELDS]
         + [(name, "wrong type", _wrong_type(name)) for name in FIELDS]
         + [(name, "NaN", NAN if not isinstance(FIELDS[name][1], tuple) else (NAN,))
            for name in FIELDS])


def test_every_field_has_an_out_of_range_case():
    bools = {n for n, f in FIELDS.items() if isinstance(f[1], bool)}
    assert set(FIELDS) - bools - {"progress"} <= set(OUT_OF_RANGE)


@pytest.mark.parametrize("field,kind,value", CASES,
                         ids=[f"{n}-{k.replace(' ', '_')}" for n, k, _ in CASES])
def test_bad_config_value_names_the_field(field, kind, value):
    with pytest.raises(ValueError, match=rf"(TrainConfig|SACConfig)\.{field}|{field}"):
        funcsac.TrainConfig(**{field: value, **CHOSEN.get(field, {})})


@pytest.mark.parametrize("argv,message", [
    (["--gamma", "nan"], "SACConfig.gamma must be in"),
    (["--total-steps", "-5"], "TrainConfig.total_steps must be an integer >= 1"),
    (["--autoreset-mode", "never"], "TrainConfig.autoreset_mode must be"),
    (["--sweep", "tau"], "--sweep must look like NAME=V1,V2"),
])
def test_bad_flag_exits_2(tmp_path, capsys, argv, message):
    assert main(["train", "--run-dir", str(tmp_path / "run"), "--no-progress"] + argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_flag_of_the_wrong_type_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--run-dir", str(tmp_path), "--total-steps", "many"])
    assert stop.value.code == 2 and "--total-steps: invalid int value" in capsys.readouterr().err


@pytest.mark.parametrize("env_id,message", [
    ("NoSuchEnv-v9", "cannot create environment 'NoSuchEnv-v9'"),
    ("funcsac-test/MultiDiscreteAction-v0", "unsupported action space MultiDiscrete"),
    ("funcsac-test/DictObs-v0", "unsupported Dict observation space"),
    ("funcsac-test/TupleAction-v0", "unsupported action space Tuple"),
    ("funcsac-test/UnboundedAction-v0", "has infinite bounds"),
])
def test_unsupported_environment_exits_2(tmp_path, capsys, env_id, message):
    assert main(["train", "--run-dir", str(tmp_path), "--env-id", env_id, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_env_returning_nan_observations_stops_with_a_clear_error(tmp_path):
    cfg = funcsac.TrainConfig(env_id="funcsac-test/NaNObs-v0", total_steps=50, learning_starts=10,
                              batch_size=4, hidden_sizes=(8,), compile=False, progress=False)
    with pytest.raises(ValueError, match=r"NaNObs-v0 returned a non-finite observation .* at "
                                         r"env step 1"):
        funcsac.train(cfg, tmp_path)


def test_nan_in_a_batch_passes_through_update_and_check_batch_reports_it():
    cfg = small_config()
    batch = make_batch(cfg)
    bad = batch._replace(reward=torch.full_like(batch.reward, NAN))
    _, metrics = funcsac.update(funcsac.init_state(cfg, seed=0), bad)  # documented pass-through
    assert torch.isnan(metrics["critic_loss"])
    with pytest.raises(ValueError, match="Batch.reward: expected finite values"):
        funcsac.check_batch(bad, cfg)
    inf_obs = batch._replace(obs=batch.obs.clone().index_fill_(0, torch.tensor([0]), math.inf))
    with pytest.raises(ValueError, match="Batch.obs: expected finite values"):
        funcsac.check_batch(inf_obs, cfg)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("finished") / "run"
    cfg = funcsac.TrainConfig(total_steps=60, learning_starts=30, batch_size=8, hidden_sizes=(8,),
                              eval_episodes=1, compile=False, progress=False)
    funcsac.train(cfg, run)
    return run


def _damage_truncated(run):
    data = (run / "checkpoint.pt").read_bytes()
    (run / "checkpoint.pt").write_bytes(data[: len(data) // 2])


def _damage_version(run):
    payload = load_checkpoint(run / "checkpoint.pt")
    torch.save({**payload, "version": 1}, run / "checkpoint.pt")


def _damage_replay_chunk(run):
    next((run / "replay" / "agent0").iterdir()).unlink()


def _damage_foreign(run):
    torch.save({"weights": torch.zeros(3)}, run / "checkpoint.pt")


@pytest.mark.parametrize("damage,message", [
    (lambda run: (run / "checkpoint.pt").unlink(), "no checkpoint at"),
    (_damage_truncated, "is corrupt or unreadable"),
    (_damage_version, "has format version 1, this funcsac reads version"),
    (_damage_replay_chunk, "replay chunk .* is missing"),
    (_damage_foreign, "is not a funcsac run checkpoint"),
], ids=["missing", "truncated", "other-version", "missing-replay-chunk", "foreign"])
def test_damaged_checkpoint_is_refused_and_the_run_is_untouched(tmp_path, capsys, finished_run,
                                                                damage, message):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    damage(run)
    before = {p.name: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert main(["train", "--run-dir", str(run), "--resume", "--total-steps", "90"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("funcsac: error:") and re.search(message, err), err
    after = {p.name: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("device,message", [
    pytest.param("cuda", r"'cuda' is not available: this torch has no CUDA \(torch .+\); "
                 "available: cpu", marks=pytest.mark.skipif(torch.cuda.is_available(),
                                                            reason="this torch has CUDA")),
    ("cdua", r"'cdua' is not a torch device \(such as cpu, cuda, .*\); available: cpu"),
], ids=["cuda", "typo"])
def test_a_device_this_torch_cannot_use_is_named_with_those_it_can(tmp_path, capsys,
                                                                    finished_run, device,
                                                                    message):
    assert main(["evaluate", str(finished_run), "--device", device]) == 2
    assert re.match(f"funcsac: error: device {message}", capsys.readouterr().err)
    assert main(["train", "--run-dir", str(tmp_path / "run"), "--device", device]) == 2
    assert re.match(f"funcsac: error: TrainConfig.device {message}", capsys.readouterr().err)
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match=f"SACConfig.device {message}"):
        small_config(device=device)
    # checked before the checkpoint is read: the device is at fault, not the run
    with pytest.raises(ValueError, match=f"^device {message}") as error:
        funcsac.load(tmp_path / "no-run", device=device)
    assert not isinstance(error.value, CheckpointError)
