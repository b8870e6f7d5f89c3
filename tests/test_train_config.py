"""TrainConfig is a plain typed dataclass whose agent fields are SACConfig's, and the command
line's help comes from it and from the registries, so neither can drift."""
import dataclasses
import typing

import pytest

import funcsac
from funcsac.cli import build_parser
from funcsac.config import SACConfig
from funcsac.driver.config import AGENT_FIELDS, TrainConfig, help_text
from funcsac.networks import NETWORKS


def test_agent_fields_are_sacconfigs_with_its_defaults_and_compatible_types():
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    train_types, sac_types = typing.get_type_hints(TrainConfig), typing.get_type_hints(SACConfig)
    for f in AGENT_FIELDS:
        assert fields[f.name].default == f.default, f.name
        # TrainConfig may say more (Tuple[int, ...] for SACConfig's tuple), never something else
        origin = typing.get_origin(train_types[f.name]) or train_types[f.name]
        expected = typing.get_origin(sac_types[f.name]) or sac_types[f.name]
        assert origin is expected, f.name
    config = TrainConfig(critic_lr=1e-4, hidden_sizes=(32, 32), network="simba")
    sac = config.sac_config(3, 1)
    assert (sac.critic_lr, sac.hidden_sizes, sac.network) == (1e-4, (32, 32), "simba")


def test_every_field_has_its_help_and_the_help_names_what_is_registered():
    for f in dataclasses.fields(TrainConfig):
        assert f.metadata["help"], f.name
    for name in funcsac.ALGORITHMS:
        assert name in help_text("algorithm")
    assert all(name in help_text("network") for name in NETWORKS)
    funcsac.register(funcsac.Algorithm("help-check", funcsac.Losses(), help="a test variant"))
    try:
        assert "help-check (tanh_gaussian): a test variant" in help_text("algorithm")
    finally:
        del funcsac.ALGORITHMS["help-check"]


@pytest.mark.parametrize("flags, field, value", [
    (["--alpha-adam-betas", "0.5", "0.999"], "alpha_adam_betas", [0.5, 0.999]),
    (["--hidden-sizes", "64", "64"], "hidden_sizes", [64, 64]),
    (["--num-target-critics", "none"], "num_target_critics", None),
])
def test_flags_parse_as_the_fields_types(flags, field, value):
    args = build_parser().parse_args(["train", "--run-dir", "x", *flags])
    assert getattr(args, field) == value
