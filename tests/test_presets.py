"""Presets as their references run them: the published widths and learning rates, and the values
a reference sets per task, chosen for the run's env and said on the command line."""
import pytest

from funcsac.driver.cli import _train_config, build_parser
from funcsac.driver.presets import PER_TASK, PRESETS, per_task_choices, preset, task_of


def _agent(argv):
    config = _train_config(build_parser().parse_args(["train", "--run-dir", "x", *argv]))
    return config.sac_config(17, 6)


@pytest.mark.parametrize("env_id,task", [("Hopper-v5", "Hopper"), ("HalfCheetah-v4", "HalfCheetah"),
                                         ("ALE/Pong-v5", "Pong"), ("Pendulum-v1", "Pendulum"),
                                         ("MyEnv", "MyEnv"), ("dm_control/walker-walk-v0",
                                                              "walker-walk")])
def test_task_of_drops_namespace_and_version(env_id, task):
    assert task_of(env_id) == task


@pytest.mark.parametrize("name,env_id,expected", [
    # SamsungLabs/tqc_pytorch README: HalfCheetah 0, Hopper 5, the others 2
    ("tqc", "HalfCheetah-v5", dict(drop_quantiles=0)),
    ("tqc", "Hopper-v5", dict(drop_quantiles=5)),
    ("tqc", "Walker2d-v5", dict(drop_quantiles=2)),
    # MBPO's target entropies; DroQ's dropout per task (0.01 elsewhere)
    ("redq", "Hopper-v5", dict(target_entropy=-1.0)),
    ("redq", "Ant-v5", dict(target_entropy=-4.0)),
    ("droq", "Humanoid-v5", dict(target_entropy=-2.0, critic_dropout=0.1)),
    ("droq", "HalfCheetah-v5", dict(target_entropy=-3.0, critic_dropout=0.01)),
    # a single critic where episodes never terminate
    ("simba", "HalfCheetah-v5", dict(num_critics=1, num_target_critics=1)),
    ("simba", "Hopper-v5", dict(num_critics=2)),
])
def test_a_preset_takes_its_references_value_for_the_task(name, env_id, expected, capsys):
    agent = _agent(["--preset", name, "--env-id", env_id])
    flat = agent.settings()
    assert {k: flat[k] for k in expected} == expected
    said = capsys.readouterr().out
    assert all(f"preset {name} on {env_id}: {k}" in said for k in PER_TASK[name])


def test_an_unknown_task_takes_the_references_default_and_a_flag_wins(capsys):
    assert _agent(["--preset", "redq", "--env-id", "Pendulum-v1"]).target_entropy == -6.0
    assert "target_entropy = none (on a task it lists no value for" in capsys.readouterr().out
    agent = _agent(["--preset", "tqc", "--env-id", "Hopper-v5", "--drop-quantiles", "3"])
    assert agent.algorithm_options.drop_quantiles == 3
    assert "drop_quantiles" not in capsys.readouterr().out  # the flag chose, not the table


def test_presets_have_their_references_widths_and_learning_rates():
    crossq, tqc = _agent(["--preset", "crossq"]), _agent(["--preset", "tqc"])
    # sbx's CrossQ: critics 2 x 1024, actor 2 x 256; tqc_pytorch: critics 3 x 512, actor 2 x 256
    assert (crossq.hidden_sizes, crossq.actor_hidden_sizes) == ((1024, 1024), (256, 256))
    assert (tqc.hidden_sizes, tqc.actor_hidden_sizes) == ((512, 512, 512), (256, 256))
    for name in ("redq", "droq"):  # REDQ's redq_sac.py: 3e-4 for Q, pi and alpha
        agent = _agent(["--preset", name])
        assert (agent.actor_lr, agent.critic_lr, agent.alpha_lr) == (3e-4, 3e-4, 3e-4)


@pytest.mark.parametrize("name,weight_init,squash,log_std_min", [
    ("sac", "torch", "tanh", -5.0),            # CleanRL: nn.Linear's init, tanh to [-5, 2]
    ("redq", "xavier_uniform", "clip", -20.0),  # REDQ core.py: weights_init_, clamp(-20, 2)
    ("droq", "xavier_uniform", "clip", -20.0),  # built on REDQ's code
    ("crossq", "lecun_normal", "clip", -20.0),  # sbx: flax's Dense default, clip(-20, 2)
    ("tqc", "torch", "clip", -20.0),            # tqc_pytorch: nn.Linear, clamp(-20, 2)
    ("drq", "orthogonal", "tanh", -10.0),       # drq utils.weight_init, tanh to [-10, 2]
])
def test_presets_start_and_bound_the_log_std_as_their_references(name, weight_init, squash,
                                                                 log_std_min):
    agent = _agent(["--preset", name])
    assert (agent.network_options.weight_init, agent.log_std_squash, agent.log_std_min,
            agent.log_std_max) == (weight_init, squash, log_std_min, 2.0)


def test_every_per_task_setting_is_a_setting_of_its_preset():
    for name, table in PER_TASK.items():
        assert name in PRESETS
        for setting, (values, default, source) in table.items():
            assert source and values
            assert preset(name, "NoSuchTask-v0").get(setting, None) == default
            assert set(per_task_choices(name, "Hopper-v5")) == set(table)


def test_flashsac_published_is_flashsac_with_the_published_runs_actor_head():
    later, published = preset("flashsac"), preset("flashsac-published")
    changed = {k for k in later.keys() | published.keys() if later.get(k) != published.get(k)}
    assert changed == {"policy_head", "log_std_min", "log_std_max"}
    agent = _agent(["--preset", "flashsac-published"])
    assert (agent.network_options.policy_head, agent.log_std_min, agent.log_std_max) == (
        "unit", -10.0, 2.0)
