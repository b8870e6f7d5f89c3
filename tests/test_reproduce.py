"""docs/reproduce.md: its tables are what bench/campaigns/reproduce.py writes from the
campaigns' results,
and each command on it, run through funcsac's command line, is the configuration the campaign
ran."""
import os
import shlex
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reproduce.md"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    # the bench's first import sets this variable; the test's end restores it
    monkeypatch.setenv("FUNCSAC_MKL_VENDOR_CHECK",
                       os.environ.get("FUNCSAC_MKL_VENDOR_CHECK", "auto"))
    from bench.campaigns import reproduce
    return reproduce


def commands(text: str) -> dict:
    """``{comment: argv}`` of the commands that follow a comment in the page's bash blocks
    (continued lines joined)."""
    found, comment = {}, None
    for block in text.split("```bash\n")[1:]:
        body = block.split("```")[0].replace("\\\n", " ")
        for line in body.splitlines():
            if line.startswith("# "):
                comment = line[2:]
            elif line.strip() and comment:
                found[comment], comment = shlex.split(line), None
    return found


def test_the_page_is_what_the_results_give(bench, tmp_path):
    page = tmp_path / "reproduce.md"
    shutil.copy(PAGE, page)
    bench.main([str(page)])
    assert page.read_text() == PAGE.read_text(), "run python -m bench.campaigns.reproduce"


def test_each_command_is_the_configuration_the_campaign_ran(bench):
    from funcsac.driver.cli import _train_config, build_parser
    from funcsac.driver.presets import preset
    from funcsac.driver.config import TrainConfig
    found = commands(PAGE.read_text())
    mujoco = [c for c in found if len(c.split(", ")) == 3]
    assert mujoco and len(found) > len(mujoco)
    # each command its own run folder: rows of one task and algorithm differ in their seeds
    assert len({argv[argv.index("--run-dir") + 1] for argv in found.values()}) == len(found)
    ignored = ("run_dir", "checkpoint_every", "progress", "compile")
    for comment, argv in found.items():
        assert argv[:2] == ["funcsac", "train"], comment
        ran = _train_config(build_parser().parse_args(argv[1:]))
        fields = comment.split(", ")
        if len(fields) == 3:  # task, algorithm, budget: a MuJoCo campaign run
            task, algo, budget = fields[0], fields[1], int(fields[2].split()[0].replace(",", ""))
            name, settings = bench.preset_and_settings(algo)
            first, count = (int(argv[argv.index(f) + 1]) for f in ("--seed", "--num-seeds"))
            seeds = list(range(first, first + count))
            expected = TrainConfig(**{**preset(name, task), **settings,
                                      **bench.campaign_settings(task, algo, budget, seeds)})
        else:  # task, budget: the discrete campaign, funcsac's defaults
            task = fields[0]
            expected = TrainConfig(env_id=task, num_seeds=3, eval_every=bench.DISCRETE_EVERY,
                                   eval_episodes=bench.DISCRETE_EPISODES,
                                   total_steps=bench.ZOO_DQN[task]["n_timesteps"])
        got, want = ran.to_dict(), expected.to_dict()
        for name in ignored:
            got.pop(name, None), want.pop(name, None)
        assert got == want, comment


def test_flags_of_round_trips_every_kind_of_setting(bench):
    from funcsac.driver.cli import _train_config, build_parser
    settings = {"hidden_sizes": (64, 32), "compile": False, "progress": True,
                "target_entropy": None, "critic_lr": 3e-4, "log_std_squash": "clip"}
    config = _train_config(build_parser().parse_args(
        ["train", "--run-dir", "r", *bench.flags_of(settings)]))
    assert {k: getattr(config, k) for k in settings} == settings


def test_a_preset_keeps_its_own_batch_and_start_in_the_campaign_and_a_like_sbx_row_takes_sbxs(
        bench):
    from funcsac.driver.presets import preset
    own = bench.campaign_settings("Hopper-v5", "flashsac", 100_000, [1, 2, 3])
    assert "batch_size" not in own and "learning_starts" not in own
    assert (preset("flashsac", "Hopper-v5")["batch_size"],
            preset("flashsac", "Hopper-v5")["learning_starts"]) == (512, 10_000)
    for algo in ("sac", "sac@sbx", "crossq@sbx"):
        shared = bench.campaign_settings("Hopper-v5", algo, 100_000, [1, 2, 3])
        assert (shared["batch_size"], shared["learning_starts"]) == (256, 5_000), algo
