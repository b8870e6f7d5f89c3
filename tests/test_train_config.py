"""TrainConfig's agent fields are made from SACConfig's, and its options, the command line's flags
and their help from the registered variants' options, so nothing is copied by hand and a variant
defined here gets its flags without an edit to funcsac."""
import dataclasses
import json
import math
import re
import shlex
import typing

import pytest
from torch import nn

import funcsac
from funcsac.driver.cli import _train_config, build_parser, main
from funcsac.driver.flags import groups
from funcsac.driver.presets import PRESETS
from funcsac.config import SACConfig
from funcsac.driver.config import (AGENT_FIELDS, TrainConfig, help_text, load_config_file,
                                   settings)
from funcsac.registry import NETWORKS, Network, register, setting


def test_agent_fields_are_sacconfigs_with_its_defaults_types_and_help():
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    train_types, sac_types = typing.get_type_hints(TrainConfig), typing.get_type_hints(SACConfig)
    assert {f.name for f in AGENT_FIELDS} >= {"critic_lr", "hidden_sizes", "algorithm", "network"}
    for f in AGENT_FIELDS:
        assert fields[f.name].default == f.default, f.name
        assert fields[f.name].metadata["help"] == f.metadata["help"], f.name
        assert train_types[f.name] == sac_types[f.name], f.name
    config = TrainConfig(critic_lr=1e-4, hidden_sizes=(32, 32), network="simba")
    sac = config.sac_config(3, 1)
    assert (sac.critic_lr, sac.hidden_sizes, sac.network) == (1e-4, (32, 32), "simba")


def test_every_setting_has_its_help_and_the_help_names_what_is_registered():
    for name, (_, _, help) in settings().items():
        assert help, name
    for name in funcsac.ALGORITHMS:
        assert name in help_text("algorithm")
    assert all(name in help_text("network") for name in NETWORKS)
    assert "(algorithm 'tqc')" in help_text("drop_quantiles")
    # an option two algorithms share, with defaults of their own: each named with its default,
    # and the flag shows no single default
    assert ("(algorithm 'tqc': default 25, algorithm 'bro': default 100)"
            in help_text("num_quantiles"))
    assert settings()["num_quantiles"][1] is None
    funcsac.register(funcsac.Algorithm("help-check", funcsac.Losses(), help="a test variant"))
    try:
        assert "help-check (tanh_gaussian): a test variant" in help_text("algorithm")
    finally:
        del funcsac.ALGORITHMS["help-check"]


@pytest.mark.parametrize("flags, field, value", [
    (["--alpha-adam-betas", "0.5", "0.999"], "alpha_adam_betas", [0.5, 0.999]),
    (["--hidden-sizes", "64", "64"], "hidden_sizes", [64, 64]),
    (["--num-target-critics", "none"], "num_target_critics", None),
    (["--num-quantiles", "10"], "num_quantiles", 10),
    (["--critic-layer-norm"], "critic_layer_norm", True),
])
def test_flags_parse_as_the_fields_types(flags, field, value):
    args = build_parser().parse_args(["train", "--run-dir", "x", *flags])
    assert getattr(args, field) == value


def test_options_go_flat_into_the_run_config_and_nested_into_the_agents():
    """``--num-quantiles 10`` (a flag, a config file's key, a preset's) sets TQC's options; the
    run's config.json keeps the options flat beside the fields."""
    args = build_parser().parse_args(["train", "--run-dir", "x", "--preset", "tqc",
                                      "--num-quantiles", "10"])
    config = _train_config(args)
    assert {k: config.options[k] for k in ("num_quantiles", "drop_quantiles")} == {
        "num_quantiles": 10, "drop_quantiles": 2}
    sac = config.sac_config(17, 6)
    options = funcsac.variants.tqc.algorithm.TQCOptions(num_quantiles=10, drop_quantiles=2)
    assert sac.algorithm_options == options
    flat = json.loads(json.dumps(config.to_dict()))
    assert flat["num_quantiles"] == 10 and "options" not in flat
    assert TrainConfig.from_dict(flat) == config
    with pytest.raises(ValueError, match="unknown config keys \\['num_quantile'\\]; did you "
                                         "mean 'num_quantiles' for 'num_quantile'"):
        TrainConfig(num_quantile=10)


def test_a_misspelled_key_is_told_its_nearest_and_not_every_key(tmp_path):
    """A config file (and a TrainConfig keyword) with a typo names the setting it was near,
    not the hundred-odd settings there are."""
    path = tmp_path / "run.toml"
    path.write_text('env_id = "Pendulum-v1"\ncritic_lrr = 0.001\n')
    with pytest.raises(ValueError) as raised:
        TrainConfig(**load_config_file(path))
    said = str(raised.value)
    assert "did you mean 'critic_lr' for 'critic_lrr'?" in said and "batch_size" not in said


@dataclasses.dataclass(frozen=True)
class WideOptions:
    widen: int = setting(2, "multiplies every hidden width")

    def check(self, config):
        if not (isinstance(self.widen, int) and self.widen >= 1):
            raise ValueError(f"SACConfig.widen must be an integer >= 1, got {self.widen!r}")


def _wide(in_dim, out_dim, hidden_sizes, options, part):
    return funcsac.mlp(in_dim, out_dim, [h * options.widen for h in hidden_sizes])


@pytest.fixture
def wide():
    register(Network("wide", _wide, WideOptions, help="an MLP of wider layers"))
    yield "wide"
    del NETWORKS["wide"]


def test_a_network_defined_here_brings_its_options_and_flags(wide, tmp_path):
    assert "(network 'wide')" in help_text("widen") and "wide: an MLP" in help_text("network")
    args = build_parser().parse_args(["train", "--run-dir", str(tmp_path), "--network", "wide",
                                      "--widen", "3", "--hidden-sizes", "8"])
    sac = _train_config(args).sac_config(3, 1)
    assert sac.network_options == WideOptions(3)
    linear = [m for m in funcsac.init_state(sac).static.critic.modules()
              if isinstance(m, nn.Linear)]
    assert linear[0].out_features == 24
    with pytest.raises(ValueError, match="SACConfig.widen must be an integer >= 1, got 0"):
        TrainConfig(network="wide", widen=0)
    with pytest.raises(ValueError, match="widen is an option of network 'wide', which this "
                                         "config does not choose"):
        TrainConfig(widen=3)


def test_an_option_name_taken_by_another_room_is_refused(wide):
    @dataclasses.dataclass(frozen=True)
    class Clash:
        widen: int = setting(1, "the same name as the wide network's")
        critic_lr: float = setting(1.0, "a shared setting's name")

    with pytest.raises(ValueError, match="algorithm 'clash' has an option 'widen', a name taken "
                                         "by network 'wide'"):
        register(funcsac.Algorithm("clash", funcsac.Losses(), options=Clash))
    assert "clash" not in funcsac.ALGORITHMS


def test_an_option_named_as_a_run_setting_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Seeded:
        seed: int = setting(0, "a run setting's name")

    @dataclasses.dataclass(frozen=True)
    class Gammad:
        gamma: float = setting(0.9, "a shared setting's name")

    # a config that chooses it refuses it: the core's for its fields, the driver's (its flags
    # and its configs) for the run's settings
    register(Network("gammad", _wide, Gammad))
    try:
        with pytest.raises(ValueError, match="network 'gammad' has an option 'gamma', a name "
                                             "taken by a field of SACConfig"):
            SACConfig.of(obs_dim=3, act_dim=1, network="gammad")
    finally:
        del NETWORKS["gammad"]
    register(Network("seeded", _wide, Seeded))
    try:
        for make in (settings, TrainConfig):
            with pytest.raises(ValueError, match="network 'seeded' has an option 'seed', a name "
                                                 "taken by a setting of TrainConfig"):
                make()
    finally:
        del NETWORKS["seeded"]


def test_resume_compares_the_options_as_they_resolve():
    """A checkpoint's options are compared with the new config's, defaults filled in on both
    sides: another drop_quantiles is refused, the same value given or left out is not."""
    from funcsac.driver.run.checkpoint import CheckpointError
    from funcsac.driver.run.resume import PAYLOAD_KEYS, check_resumable
    payload = dict.fromkeys(PAYLOAD_KEYS)
    payload["config"] = TrainConfig(algorithm="tqc", drop_quantiles=1).to_dict()
    with pytest.raises(CheckpointError, match="drop_quantiles: checkpoint 1 vs now 2"):
        check_resumable(TrainConfig(algorithm="tqc"), payload)
    payload["config"] = TrainConfig(algorithm="tqc").to_dict()
    check_resumable(TrainConfig(algorithm="tqc", num_quantiles=25), payload)


def test_n_step_left_unset_is_the_policy_familys_and_a_resume_keeps_the_checkpoints():
    """``n_step`` and ``learning_starts`` None settle per environment (n_step: 3 for discrete
    actions, 1 for continuous ones and for image observations); a given value stays; a resume
    takes the checkpoint's."""
    import numpy as np
    from funcsac.driver.envs.spec import EnvSpec
    from funcsac.driver.run.checkpoint import CheckpointError
    from funcsac.driver.run.resume import check_resumable
    one = np.zeros(1)
    discrete = EnvSpec(4, 2, one, one + 1, discrete=True)
    continuous = EnvSpec(3, 1, one - 1, one + 1)
    images = EnvSpec(0, 2, one, one + 1, discrete=True, image_shape=(3, 64, 64))
    cfg = TrainConfig(env_id="CartPole-v1")
    assert cfg.n_step is None
    assert [cfg.for_env(s).n_step for s in (discrete, continuous, images)] == [3, 1, 1]
    assert TrainConfig(env_id="CartPole-v1", n_step=5).for_env(discrete).n_step == 5
    payload = {"config": cfg.for_env(discrete).to_dict(), "agent": {}, "buffers": [],
               "progress": {}, "envs": {}}
    assert check_resumable(cfg, payload).n_step == 3
    with pytest.raises(CheckpointError, match="n_step: checkpoint 3 vs now 2"):
        check_resumable(TrainConfig(env_id="CartPole-v1", n_step=2), payload)
    # learning_starts likewise: 2,000 for discrete actions, 5,000 for continuous ones
    assert cfg.learning_starts is None
    assert [cfg.for_env(s).learning_starts for s in (discrete, continuous, images)] == [
        2000, 5000, 2000]
    assert TrainConfig(env_id="x", learning_starts=7).for_env(discrete).learning_starts == 7
    assert check_resumable(cfg, payload).learning_starts == 2000
    with pytest.raises(CheckpointError, match="learning_starts: checkpoint 2000 vs now 100"):
        check_resumable(TrainConfig(env_id="CartPole-v1", learning_starts=100), payload)
    # the noise holds likewise: each draw held 1-32 steps (P(n) ~ 1/n) for discrete actions, a
    # fresh draw each step for continuous ones; a checkpoint from before noise_hold held none
    assert [(cfg.for_env(s).noise_hold, cfg.for_env(s).noise_hold_max)
            for s in (discrete, continuous)] == [(1.0, 32), (0.0, 16)]
    assert TrainConfig(env_id="x", noise_hold=0.0).for_env(discrete).noise_hold == 0.0
    assert check_resumable(cfg, payload).noise_hold_max == 32
    older = dict(payload, config={k: v for k, v in payload["config"].items()
                                  if not k.startswith("noise_hold")})
    assert (check_resumable(cfg, older).noise_hold, check_resumable(cfg, older).noise_hold_max) == (
        0.0, 16)


def _short_help(capsys, *flags) -> str:
    assert main(["train", *flags, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("flags", [[], *(["--preset", name] for name in sorted(PRESETS)),
                                   ["--algorithm", "tqc", "--num-quantiles", "7"]])
def test_the_short_help_fits_a_screen_and_its_flags_give_the_config_back(capsys, flags):
    """``funcsac train --help`` shows, by group, the flags of the config the run would take; given
    as they are shown they make that config."""
    text = _short_help(capsys, *flags)
    lines = text.splitlines()
    assert len(lines) <= 120, len(lines)
    start = lines.index("run:")
    shown = lines[start:lines.index("", start)]
    words = [w for line in shown if line.startswith("  ") for w in shlex.split(line)]
    assert len([w for w in words if w.startswith("--")]) >= 85
    args = build_parser().parse_args(["train", "--run-dir", "x", *words])
    # as the help makes it (a preset that needs offline data shows its settings without them)
    expected = _train_config(build_parser().parse_args(["train", "--run-dir", "x", *flags,
                                                        "--help"]))
    assert _train_config(args).to_dict() == expected.to_dict()


def test_the_short_help_names_the_chosen_variants_options_only(capsys):
    text = _short_help(capsys, "--algorithm", "tqc")
    assert "--num-quantiles 25" in text and "--drop-quantiles 2" in text
    assert "--pessimism" not in text and "--num-quantiles" not in _short_help(capsys)


def test_every_field_is_in_one_group_and_help_all_states_the_true_defaults(capsys):
    every = [n for names in groups().values() for n in names]
    fields = [f.name for f in dataclasses.fields(TrainConfig) if f.name != "options"]
    assert sorted(every) == sorted(settings()) and len(every) == len(set(every))
    assert set(fields) <= set(every)
    with pytest.raises(SystemExit):
        main(["train", "--help-all"])
    assert "learning:" in capsys.readouterr().out
    train = next(a for a in build_parser()._subparsers._group_actions[0].choices.values()
                 if a.prog.endswith("train"))
    helps = {a.dest: a.help for a in train._actions}
    for name, default in TrainConfig.field_defaults().items():
        if name != "options":
            assert f"(default: {'none' if default is None else default})" in helps[name], name


def test_the_help_states_each_policy_familys_default_target_entropy():
    help = settings()["target_entropy"][2]
    assert "-act_dim for continuous actions" in help
    factor = float(re.search(r"([0-9.]+) log n for n discrete", help).group(1))
    for n in (2, 3, 6):
        assert funcsac.registry.POLICIES["categorical"].default_target_entropy(n) == \
            pytest.approx(factor * math.log(n))
    assert funcsac.registry.POLICIES["tanh_gaussian"].default_target_entropy(4) == -4
