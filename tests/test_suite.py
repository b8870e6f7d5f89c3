"""bench/campaigns/suite.py runs a tiny MuJoCo campaign, is interrupted, and continues where it
stopped:
the resumed campaign's results equal an uninterrupted one's, its wall time counts both pieces,
and the report names the task."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # a child imports bench from anywhere
pytest.importorskip("mujoco")


@pytest.fixture
def bench_imports(monkeypatch):
    """bench/ importable, and the variable the bench's first import sets restored at the end."""
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("FUNCSAC_MKL_VENDOR_CHECK",
                       os.environ.get("FUNCSAC_MKL_VENDOR_CHECK", "auto"))


def suite_command(tmp_path: Path, name: str) -> list:
    peers = "sbx" if importlib.util.find_spec("sbx") else "none"
    return [sys.executable, "-m", "bench.campaigns.suite", "--budget", "2000", "--tasks",
            "Hopper-v5", "--algos", "sac", "--num-seeds", "1", "--eager", "--peers", peers,
            "--results", str(tmp_path / f"{name}.jsonl"), "--runs-dir", str(tmp_path / name),
            "--results-md", str(tmp_path / f"{name}.md")]


def rows(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_a_campaign_interrupted_and_run_again_equals_one_run_straight(tmp_path):
    subprocess.run(suite_command(tmp_path, "straight"), check=True, cwd=tmp_path, env=BENCH_ENV)
    command = suite_command(tmp_path, "pieces")
    first = subprocess.Popen(command, cwd=tmp_path, env=BENCH_ENV)
    checkpoints = []
    while first.poll() is None and not checkpoints:
        time.sleep(0.5)
        checkpoints = list((tmp_path / "pieces").glob("funcsac-*/checkpoint.pt"))
    first.send_signal(signal.SIGTERM)
    assert first.wait() != 0 and checkpoints, "the campaign ended before it could be interrupted"
    assert rows(tmp_path / "pieces.jsonl") == []
    subprocess.run(command, check=True, cwd=tmp_path, env=BENCH_ENV)
    straight = {r["library"]: r for r in rows(tmp_path / "straight.jsonl")}
    pieces = {r["library"]: r for r in rows(tmp_path / "pieces.jsonl")}
    assert set(pieces) == set(straight) and pieces["funcsac"]["pieces"] == 2
    # the same evaluations at the same steps (the wall-clock column differs)
    assert [r[1:] for r in pieces["funcsac"]["curve"]] == \
        [r[1:] for r in straight["funcsac"]["curve"]]
    assert [r[1] for r in straight["funcsac"]["curve"]] == [500, 1000, 1500, 2000]
    report = (tmp_path / "pieces.md").read_text()
    assert "| Hopper-v5 | sac |" in report and (tmp_path / "suite.png").exists()


def test_a_like_for_like_row_runs_funcsac_at_the_peers_settings_beside_the_peers_row(tmp_path):
    """``sac@sbx``: funcsac at sbx's SAC settings (learning rates 3e-4, log-std clipped to
    [-20, 2], lecun-normal)."""
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, "-m", "bench.campaigns.suite_child", "funcsac",
                    "Pendulum-v1", "sac@sbx", "400", "1", str(tmp_path / "run"), str(out),
                    "--eager"], check=True, cwd=tmp_path, env=BENCH_ENV)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert {k: saved[k] for k in ("actor_lr", "critic_lr", "alpha_lr", "log_std_squash",
                                  "log_std_min", "weight_init")} == {
        "actor_lr": 3e-4, "critic_lr": 3e-4, "alpha_lr": 3e-4, "log_std_squash": "clip",
        "log_std_min": -20.0, "weight_init": "lecun_normal"}
    assert json.loads(out.read_text())["curve"]


def test_each_like_sbx_setting_is_a_valid_run_against_an_sbx_peer(bench_imports):
    """Every ``ALGO@sbx`` of the campaign names a peer sbx runs and settings that make a valid
    run of its preset on the campaign's tasks."""
    import funcsac
    from funcsac.driver.presets import preset
    from bench.campaigns.suite_child import LIKE_SBX, SBX
    for algo, (peer, name, settings, _) in LIKE_SBX.items():
        assert peer in SBX, algo
        for task in ("HalfCheetah-v5", "Hopper-v5"):
            cfg = funcsac.TrainConfig(**{**preset(name, task), **settings, "env_id": task})
            sac = cfg.sac_config(17, 6)
            assert sac.hidden_sizes == (256, 256), algo
            fields = [k for k in settings if k != "target_entropy" and hasattr(sac, k)]
            assert {k: getattr(sac, k) for k in fields} == {k: settings[k] for k in fields}


def test_simba_at_sbx_has_the_shapes_of_sbx_s_simba_policy(bench_imports):
    """``simba@sbx`` and sbx's SAC with its SimbaPolicy (the campaign's peer) build an actor and
    critics of the same parameter shapes at HalfCheetah's sizes (flax's kernels transposed)."""
    pytest.importorskip("sbx")
    import gymnasium as gym
    import jax
    import sbx

    import funcsac
    from funcsac.state import init_state
    from bench.campaigns.suite_child import LIKE_SBX, SBX
    peer, name, settings, _ = LIKE_SBX["simba@sbx"]
    algo, peer_settings = SBX[peer]
    model = getattr(sbx, algo)(peer_settings["policy"], gym.make("HalfCheetah-v5"),
                               policy_kwargs={"net_arch": [256, 256]}, seed=0)

    def shapes(tree) -> list:  # flax kernels are (in, out), torch's weights (out, in)
        return sorted(tuple(reversed(x.shape)) for x in jax.tree_util.tree_leaves(tree))

    config = funcsac.TrainConfig(**{**funcsac.presets.preset(name), **settings,
                                    "env_id": "HalfCheetah-v5"}).sac_config(17, 6)
    state = init_state(config)
    ours = {part: sorted(tuple(v.shape[1:] if part == "critic" else v.shape)
                         for v in getattr(state, part).values())
            for part in ("actor", "critic")}
    # the actor's head: one layer of 2 x 6 outputs here (mean, log-std), two of 6 there
    head = [x for x in ours["actor"] if x[0] == 12]
    actor = sorted([x for x in ours["actor"] if x[0] != 12] + [(6, *x[1:]) for x in head] * 2)
    assert len(head) == 2 and actor == shapes(model.policy.actor_state.params)
    # sbx's critics are vmapped: a leading axis of 2 on every leaf, as funcsac's ensemble
    critic = jax.tree_util.tree_leaves(model.policy.qf_state.params)
    assert {x.shape[0] for x in critic} == {config.num_critics} == {2}
    assert ours["critic"] == sorted(tuple(reversed(x.shape[1:])) for x in critic)
    for part in (model.policy.actor_state, model.policy.qf_state):  # optax.adamw's settings
        hyper = {k: float(v) for k, v in part.opt_state.hyperparams.items()}
        assert hyper["weight_decay"] == pytest.approx(config.weight_decay)
        assert hyper["learning_rate"] == pytest.approx(config.critic_lr)
    assert (config.weight_decay_on, config.actor_lr, config.alpha_lr) == ("all", 3e-4, 3e-4)


def test_a_variant_of_a_preset_is_its_preset_with_the_settings_it_changes(bench_imports):
    """``flashsac-unit-head``: the flashsac-published preset (flashsac with the actor's head of
    the code that ran FlashSAC's published results); ``flashsac-held-random``: flashsac with its
    random actions held; each with FlashSAC's published figure beside it and no sbx peer."""
    import funcsac
    from bench.campaigns.suite import published_figure
    from bench.campaigns.suite_child import SBX, peer_of, preset_and_settings
    for algo, expected in [("flashsac-bf16", ("small", -5.0, 0.0, False)),
                           ("flashsac-unit-head-bf16", ("unit", -10.0, 2.0, False)),
                           ("flashsac-held-random-bf16", ("small", -5.0, 0.0, True))]:
        name, settings = preset_and_settings(algo)
        cfg = funcsac.TrainConfig(**{**funcsac.presets.preset(name, "Hopper-v5"), **settings,
                                     "env_id": "Hopper-v5"})
        sac = cfg.sac_config(11, 3)
        assert (sac.network_options.policy_head, sac.log_std_min, sac.log_std_max,
                cfg.hold_random_actions, sac.precision) == (*expected, "bf16"), algo
        assert peer_of(algo) == name and name not in SBX  # no sbx peer
        assert published_figure(algo, "Hopper-v5", 100_000) == "2,121 (FlashSAC)"


def test_any_algorithm_with_the_bf16_suffix_is_the_same_run_with_bf16_products(bench_imports):
    """``ALGO-bf16``: ALGO's preset, settings, peer and campaign settings, with ``precision``
    bf16 added (a preset's own batch and start kept, as without the suffix)."""
    from bench.campaigns.suite_child import campaign_settings, peer_of, preset_and_settings
    for algo in ("sac", "flashsac", "crossq@sbx", "tqc@sbx", "flashsac-unit-head"):
        name, settings = preset_and_settings(algo)
        assert preset_and_settings(algo + "-bf16") == (name, {**settings, "precision": "bf16"})
        assert peer_of(algo + "-bf16") == peer_of(algo)
        for task in ("HalfCheetah-v5", "Hopper-v5"):
            assert (campaign_settings(task, algo + "-bf16", 100_000, [1, 2, 3])
                    == campaign_settings(task, algo, 100_000, [1, 2, 3]))
    assert "batch_size" not in campaign_settings("Hopper-v5", "flashsac-bf16", 100_000, [1])
    assert campaign_settings("Hopper-v5", "sac-bf16", 100_000, [1])["batch_size"] == 256


def test_a_published_seed_range_holds_its_mean_and_stands_beside_it(bench_imports):
    """Where a result file gives each seed, the table shows the lowest and highest beside the
    mean, and the mean lies between them."""
    from bench.campaigns.published import AT_100K, SEED_RANGE_100K, published_table
    methods = {(name, setting): figures for (name, setting, _), figures in AT_100K.items()}
    table = published_table()
    for method, ranges in SEED_RANGE_100K.items():
        for task, (low, high) in ranges.items():
            assert low <= methods[method][task] <= high, (method, task)
            assert f"{methods[method][task]:,} ({low:,} to {high:,})" in table


def test_each_row_stands_beside_its_own_methods_published_figure(bench_imports):
    """At 100k a preset's row shows its paper's figure (FlashSAC's for flashsac, with or without
    bf16 or sbx's settings), a preset without one MR.Q's, and a budget no one published none."""
    from bench.campaigns.suite import published_figure
    assert published_figure("flashsac-bf16", "HalfCheetah-v5", 100_000) == "9,815 (FlashSAC)"
    assert published_figure("simbav2-utd1", "Hopper-v5", 100_000) == "893 (SimbaV2)"
    assert published_figure("sac@sbx", "Walker2d-v5", 100_000) == "690 (SAC)"
    assert published_figure("tqc", "Ant-v5", 100_000) == "2,801 (MR.Q)"
    assert published_figure("crossq", "Humanoid-v5", 300_000) == "4,997 (MR.Q)"
    assert published_figure("crossq@sbx", "Hopper-v5", 50_000) == "-"


def _row(seeds: list, final: list) -> dict:
    return {"library": "funcsac", "task": "Hopper-v5", "algo": "crossq", "budget": 100_000,
            "seeds": seeds, "curve": [[60.0, 100_000, final]], "split": {}, "wall_s": 600.0,
            "pieces": 1, "machine": "Intel Xeon (AVX-512, AMX), 2 cores", "date": "2026-12-06"}


def test_seeds_run_in_pieces_of_seeds_pool_in_the_report_and_none_runs_twice(bench_imports,
                                                                              tmp_path):
    """``--first-seed``: a row's seeds can run a few at a time, each piece its own row; the
    report pools them (mean over all seeds, walls summed), and a run whose seeds a finished row
    already holds is refused before anything starts."""
    from bench.campaigns import suite
    results = tmp_path / "suite.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in (
        _row([1], [1000.0]), _row([2, 3], [2000.0, 3000.0]))))
    text = suite.report(results, tmp_path / "suite.png")
    assert "| Hopper-v5 | crossq | 2,000 ± 1,000 | - | 1,200 (3) |" in text
    argv = ["--budget", "100000", "--tasks", "Hopper-v5", "--algos", "crossq", "--peers", "none",
            "--results", str(results), "--runs-dir", str(tmp_path / "runs"),
            "--results-md", str(tmp_path / "r.md")]
    with pytest.raises(SystemExit, match=r"seeds \[3\] are already in a finished row"):
        suite.main(argv + ["--first-seed", "3", "--num-seeds", "2"])
    assert not (tmp_path / "runs").exists()
    suite.main(argv + ["--num-seeds", "1"])  # seed 1 is done: nothing runs, the report is written
    assert not (tmp_path / "runs").exists() and "| crossq |" in (tmp_path / "r.md").read_text()


def test_a_rows_two_sides_can_run_in_different_sittings(bench_imports, monkeypatch, tmp_path):
    """``--peers none`` runs funcsac's side of a row alone and ``--peers only`` sbx's, one
    process a seed; together they run what the default runs, nothing twice."""
    from bench.campaigns import suite
    ran = []

    def fake_child(args, run_dir, flags, pieces):
        ran.append((args[0], args[4], pieces))
        seeds = args[4].split(",")
        return {"curve": [[60.0, 50_000, [1000.0] * len(seeds)]], "split": {}, "wall_s": 60.0,
                "pieces": 1}

    monkeypatch.setattr(suite, "run_child", fake_child)
    argv = ["--budget", "50000", "--tasks", "Hopper-v5", "--algos", "tqc@sbx", "--num-seeds", "2",
            "--results", str(tmp_path / "suite.jsonl"), "--runs-dir", str(tmp_path / "runs"),
            "--results-md", str(tmp_path / "r.md")]
    suite.main(argv + ["--peers", "only"])
    assert ran == [("sbx", "1", False), ("sbx", "2", False)]
    suite.main(argv + ["--peers", "none"])
    assert ran[2:] == [("funcsac", "1,2", True)]
    suite.main(argv)  # both sides are in: nothing runs again
    assert len(ran) == 3
    assert "| Hopper-v5 | tqc@sbx | 1,000 ± 0 | 1,000 ± 0 |" in (tmp_path / "r.md").read_text()


def test_each_row_says_what_differs_from_its_sbx_side(bench_imports, tmp_path):
    """The report's last column: an ``ALGO@sbx`` row's remaining difference (``LIKE_SBX``), a
    plain preset's own settings, bf16 products where the row has them, and ``-`` where sbx has no
    such algorithm."""
    from bench.campaigns import suite
    from bench.campaigns.suite_child import LIKE_SBX, differs_from_sbx
    assert all(differs for *_, differs in LIKE_SBX.values())
    assert "orthogonal" in differs_from_sbx("simba@sbx")
    assert differs_from_sbx("tqc@sbx") == "none known"
    assert differs_from_sbx("tqc@sbx-bf16") == "products in bf16 (sbx: fp32)"
    assert differs_from_sbx("simba@sbx-bf16").startswith("products in bf16 (sbx: fp32); the emb")
    assert "learning rates 1e-3" in differs_from_sbx("sac")
    assert differs_from_sbx("droq") == "the droq preset's own settings (docs/algorithms.md)"
    assert differs_from_sbx("flashsac-bf16") == differs_from_sbx("redq") == "-"
    results = tmp_path / "suite.jsonl"
    results.write_text("".join(json.dumps({**_row([1], [1000.0]), **change}) + "\n" for change in (
        {"algo": "simba@sbx"}, {"algo": "simba", "library": "sbx"})))
    text = suite.report(results, tmp_path / "suite.png")
    row = next(line for line in text.splitlines() if line.startswith("| Hopper-v5 | simba@sbx"))
    assert row.count("|") == 11 and row.endswith(f"| {differs_from_sbx('simba@sbx')} |")


def test_a_row_names_each_sides_cpu_where_its_sides_ran_on_different_cpus(bench_imports,
                                                                           tmp_path):
    """A row whose runs all ran on one CPU names it; a row whose sides ran on different CPUs
    names each side's and gives no wall ratio."""
    from bench.campaigns import suite
    amd = "AMD EPYC (AVX-512, AVX512-BF16), 2 cores"
    results = tmp_path / "suite.jsonl"
    results.write_text("".join(json.dumps({**_row([1], [1000.0]), **change}) + "\n" for change in (
        {"algo": "tqc@sbx"}, {"algo": "tqc", "library": "sbx"},
        {"algo": "droq@sbx"}, {"algo": "droq", "library": "sbx", "machine": amd})))
    lines = suite.report(results, tmp_path / "suite.png").splitlines()
    same = next(line for line in lines if line.startswith("| Hopper-v5 | tqc@sbx"))
    mixed = next(line for line in lines if line.startswith("| Hopper-v5 | droq@sbx"))
    assert "| 1.00 | Intel Xeon (AVX-512, AMX) |" in same
    assert ("| - (another CPU) | funcsac: Intel Xeon (AVX-512, AMX); "
            "sbx: AMD EPYC (AVX-512, AVX512-BF16) |") in mixed
