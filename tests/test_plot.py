"""funcsac plot: seeds pooled across run directories that differ only in seed, one line per
experiment, labels that tell the experiments apart, glob patterns."""
import json

import matplotlib.axes
import numpy as np
import pytest

from funcsac.driver.cli import main
from funcsac.driver.tools.plot import plot_runs, read_curves, run_dirs_of


def _run(path, settings, rows, sweep=None):
    """A run directory: config.json with ``settings`` and eval.csv with ``rows`` of
    ``(step, seed, return_mean, return_std)`` (and a ``critic_lr`` sweep column)."""
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"env_id": "Pendulum-v1", "seed": 0,
                                                  "total_steps": 200, **settings}))
    head = "step,seed," + ("critic_lr," if sweep else "") + "return_mean,return_std\n"
    (path / "eval.csv").write_text(head + "".join(
        f"{s},{seed}," + (f"{sweep[i]}," if sweep else "") + f"{m},{sd}\n"
        for i, (s, seed, m, sd) in enumerate(rows)))
    return path


def test_seeds_of_separate_runs_are_one_experiment(tmp_path):
    # the agent's resolved settings (as a run's config.json holds them) follow from the others
    a = _run(tmp_path / "sac-s1", {"seed": 1, "algorithm": "sac", "agent": {"x": 1}},
             [(100, 1, -900, 5), (200, 1, -300, 5)])
    # another seed, another length and logging: the same experiment
    b = _run(tmp_path / "sac-s2", {"seed": 2, "algorithm": "sac", "total_steps": 300,
                                   "log_every": 7}, [(100, 2, -700, 5), (200, 2, -100, 5)])
    c = _run(tmp_path / "crossq-s1", {"seed": 1, "algorithm": "crossq", "agent": {"x": 2}},
             [(100, 1, -500, 4)])
    curves = read_curves([a, b, c])
    assert set(curves) == {"algorithm=sac", "algorithm=crossq"}
    steps, mean, spread, seeds, runs = curves["algorithm=sac"]
    assert steps == [100, 200] and seeds == 2 and runs == 2
    np.testing.assert_allclose(mean, [-800, -200])
    np.testing.assert_allclose(spread, [100, 100])  # the seeds' std, not the episodes'
    # one seed: its episodes' std
    assert curves["algorithm=crossq"] == ([100], [-500.0], [4.0], 1, 1)
    # one experiment alone: no label
    assert set(read_curves([a, b])) == {""} and set(read_curves(a)) == {""}


def test_a_run_of_several_seeds_pools_with_a_run_of_one(tmp_path):
    together = _run(tmp_path / "together", {"seed": 1, "num_seeds": 2},
                    [(100, 1, -10, 1), (100, 2, -20, 1)])
    alone = _run(tmp_path / "alone", {"seed": 3}, [(100, 3, -30, 1)])
    (alone / "eval.csv").write_text("step,return_mean,return_std\n100,-30,1\n")  # one agent's
    (steps, mean, spread, seeds, _), = read_curves([together, alone]).values()
    assert seeds == 3 and mean == [-20.0]
    np.testing.assert_allclose(spread, [np.std([-10, -20, -30])])


def test_two_runs_of_one_seed_count_one_seed(tmp_path):
    """The same seed run twice is one seed: counted once, its runs averaged into it (not two
    samples of the spread), and the plot's label says so."""
    a = _run(tmp_path / "first", {"seed": 1}, [(100, 1, -100, 3)])
    b = _run(tmp_path / "again", {"seed": 1}, [(100, 1, -200, 5)])
    (b / "eval.csv").write_text("step,return_mean,return_std\n100,-200,5\n")  # one agent's
    curve, = read_curves([a, b]).values()
    assert (curve.seeds, curve.runs, curve.mean) == (1, 2, [-150.0])
    labels = []
    with pytest.MonkeyPatch.context() as patch:
        original = matplotlib.axes.Axes.plot
        patch.setattr(matplotlib.axes.Axes, "plot", lambda self, *args, **kw: (
            labels.append(kw.get("label")), original(self, *args, **kw))[1])
        plot_runs([a, b], tmp_path / "curve.png")
    assert labels == ["2 runs, 1 seed"]


def test_labels_of_many_differences_are_the_directories_names(tmp_path):
    many = {"algorithm": "crossq", "critic_lr": 1e-3, "batch_size": 128, "utd": 2}
    runs = [_run(tmp_path / f"crossq-s{i}", {**many, "seed": i}, [(100, i, -i, 0)]) for i in (1, 2)]
    runs.append(_run(tmp_path / "sac-s1", {"seed": 1}, [(100, 1, 0, 0)]))
    assert set(read_curves(runs)) == {"crossq-s", "sac-s1"}


def test_experiments_that_would_share_a_name_stay_apart(tmp_path):
    many = {"critic_lr": 1e-3, "batch_size": 128, "utd": 2, "tau": 0.01}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = _run(tmp_path / "a" / "run", many, [(100, 0, -1, 0)])
    other = _run(tmp_path / "b" / "run", {}, [(100, 0, -3, 0)])
    curves = read_curves([one, other])
    assert set(curves) == {"run [1]", "run [2]"}
    assert curves["run [1]"][1] == [-1.0] and curves["run [2]"][1] == [-3.0]


def test_a_directory_named_like_a_pattern_is_taken_as_it_is(tmp_path):
    run = _run(tmp_path / "sac[lr=1e-3]", {}, [(100, 0, -1, 0)])
    assert run_dirs_of([run]) == [run]
    assert read_curves(run_dirs_of([run]))[""][1] == [-1.0]


def test_sweep_values_stay_apart(tmp_path):
    run = _run(tmp_path / "sweep", {"sweep": "critic_lr=1e-4,1e-3"},
               [(100, 0, -5, 1), (100, 0, -7, 1)], sweep=["0.0001", "0.001"])
    curves = read_curves(run)
    assert set(curves) == {"critic_lr=0.0001", "critic_lr=0.001"}
    assert curves["critic_lr=0.001"][1] == [-7.0]


def test_glob_patterns_and_the_command(tmp_path, capsys):
    for i in (1, 2, 3):
        _run(tmp_path / f"hc-s{i}", {"seed": i}, [(100, i, 10 * i, 0)])
    assert run_dirs_of([tmp_path / "hc-s*", tmp_path / "hc-s1"]) == [
        tmp_path / f"hc-s{i}" for i in (1, 2, 3)]
    with pytest.raises(ValueError, match=r"nope-\* matches no run directory"):
        run_dirs_of([tmp_path / "nope-*"])
    assert main(["plot", str(tmp_path / "hc-s*"), "--out", str(tmp_path / "hc.png")]) == 0
    assert (tmp_path / "hc.png").stat().st_size > 0
    assert main(["plot", str(tmp_path / "nope-*")]) == 2
    assert "matches no run directory" in capsys.readouterr().err


def test_a_directory_without_eval_csv_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="has no eval.csv: is it a funcsac run directory"):
        read_curves(tmp_path / "empty")
