"""A fault campaign: training runs killed with SIGKILL at random points, each resumed, its final
state and evaluation rows compared bit for bit with an uninterrupted run's.

    python -m bench.campaigns.faults --kills 20 --json bench/results/faults.json

The kills are spread over the run's phases: ``collect`` (after an env step, before its rows are
stored), ``update`` (between a batch's draw and its gradient step), ``evaluate`` (mid-episode),
``checkpoint`` and ``chunk`` (half-way through writing the checkpoint or a replay chunk: the
process dies with a half-written temporary file) and ``compile`` (at a random second of the
run's own compile of its update, from an empty compile store; ``compile_in_background=False``,
so that the resumed run is compiled from its first gradient step as the uninterrupted one is;
a killed background compile is ``tests/test_children.py``'s). A killed run is continued with
``--resume`` where it left a checkpoint and started over where it had none, as a user would.
Each run is a child process: ``faults.py child ...``.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import argparse
import csv
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from bench.common.paths import child_env, python_module

PHASES = ("collect", "update", "evaluate", "checkpoint", "chunk", "compile")
SETTINGS = dict(env_id="Pendulum-v1", total_steps=1_500, learning_starts=300, eval_every=500,
                eval_episodes=1, checkpoint_every=250, log_every=250, hidden_sizes=(64, 64),
                batch_size=64, progress=False, seed=3)


def _settings(compiled: bool, total_steps: int) -> dict:
    return {**SETTINGS, "total_steps": total_steps, "compile": compiled,
            "compile_in_background": False}


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _arm(phase: str, at: float, counts: dict) -> None:
    """Count the events of every phase in ``counts``; SIGKILL this process at the ``at``-th
    event of ``phase`` (``compile``: ``at`` seconds into the first compile). ``at`` 0: count
    only."""
    import torch
    from funcsac.driver.run import collector, learner
    from funcsac.driver.tools import evaluate
    from funcsac.accel.compile import stored as stored_compile

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            if name == phase and counts[name] == at:
                _die()
            return fn(*args, **kwargs)
        return wrapper

    collector.transitions = counted("collect", collector.transitions)
    evaluate.act = counted("evaluate", evaluate.act)
    real_sample = learner.sample_batches

    def sample(*args, **kwargs):  # the batches drawn, the gradient step not taken
        out = real_sample(*args, **kwargs)
        counts["update"] = counts.get("update", 0) + 1
        if phase == "update" and counts["update"] == at:
            _die()
        return out
    learner.sample_batches = sample
    real_save = torch.save

    def save(obj, f, *args, **kwargs):  # half the bytes written, then the kill
        path = Path(os.readlink(f"/proc/self/fd/{f.fileno()}"))  # a temporary file's
        name = "chunk" if "replay" in path.parts else "checkpoint"
        counts[name] = counts.get(name, 0) + 1
        if name == phase and counts[name] == at:
            real_save(obj, f, *args, **kwargs)
            f.flush()
            f.truncate(f.tell() // 2)
            f.flush()
            _die()
        return real_save(obj, f, *args, **kwargs)
    torch.save = save
    real_compile = stored_compile.compile_stored

    def compile_stored(*args, **kwargs):
        counts["compile"] = counts.get("compile", 0) + 1
        if phase == "compile" and counts["compile"] == 1 and at:
            threading.Timer(at, _die).start()
        start = time.perf_counter()
        compiled = real_compile(*args, **kwargs)
        counts["compile_s"] = counts.get("compile_s", 0.0) + time.perf_counter() - start
        return compiled
    learner.compile_stored = compile_stored


def child(run_dir: str, phase: str, at: float, total_steps: int, compiled: bool,
          counts_path: str) -> None:
    """One run (continued where it left a checkpoint; ``compiled``: its update compiled),
    killed at ``phase``'s ``at``-th event; the counts of every phase's events written to
    ``counts_path`` when it ends."""
    import funcsac
    counts = {}
    _arm(phase, at, counts)
    run_dir = Path(run_dir)
    resume = (run_dir / "checkpoint.pt").exists()
    cfg = funcsac.TrainConfig(**_settings(compiled, total_steps))
    funcsac.train(cfg, run_dir, resume=resume, overwrite=not resume)
    Path(counts_path).write_text(json.dumps(counts))


def _run_child(run_dir: Path, phase: str, at: float, total_steps: int, compiled: bool,
               store: Path) -> tuple:
    """``(exit status, event counts or None)`` of one child run."""
    with tempfile.NamedTemporaryFile(suffix=".json") as counts:
        env = {**os.environ, "FUNCSAC_COMPILE_STORE": str(store)}
        done = subprocess.run([*python_module(__spec__.name), "child", str(run_dir), phase,
                               str(at), str(total_steps), str(int(compiled)), counts.name],
                              env=child_env(env),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        text = Path(counts.name).read_text()
    if done.returncode not in (0, -signal.SIGKILL):
        raise RuntimeError(f"a {phase} run failed:\n{done.stderr[-3000:]}")
    return done.returncode, json.loads(text) if text else None


def _final(run_dir: Path) -> tuple:
    """The final checkpoint's agent tensors and the eval.csv rows of a finished run."""
    import torch
    payload = torch.load(run_dir / "checkpoint.pt", map_location="cpu", weights_only=True)
    with open(run_dir / "eval.csv", newline="") as f:
        return payload["agent"], list(csv.reader(f))


def _same(a: tuple, b: tuple) -> bool:
    import torch
    return len(a[0]) == len(b[0]) and all(torch.equal(x, y) for x, y in zip(a[0], b[0])) \
        and a[1] == b[1]


def campaign(kills: int, seed: int, total_steps: int, phases=PHASES, work: Path = None) -> dict:
    """``kills`` killed-and-resumed runs spread over ``phases`` (round robin, each at a random
    event of its phase; ``compile``: at a random time in the first 90% of the uninterrupted
    run's compile), each compared with an uninterrupted run of the same settings."""
    rng = random.Random(seed)
    work = Path(work or tempfile.mkdtemp(prefix="funcsac-faults-"))
    references, counts = {}, {}
    for kind in sorted({p == "compile" for p in phases}):
        phase = "compile" if kind else "none"
        status, counts[kind] = _run_child(work / f"reference-{phase}", phase, 0, total_steps,
                                          kind, work / f"store-reference-{phase}")
        references[kind] = _final(work / f"reference-{phase}")
    rows = []
    for i in range(kills):
        phase = phases[i % len(phases)]
        kind = phase == "compile"
        at = (round(rng.uniform(0.5, 0.9 * counts[kind]["compile_s"]), 1) if kind
              else rng.randint(1, counts[kind][phase]))
        run_dir, store = work / f"kill{i:02d}-{phase}", work / f"store-kill{i:02d}"
        start = time.perf_counter()
        killed, _ = _run_child(run_dir, phase, at, total_steps, kind, store)
        left = (run_dir / "checkpoint.pt").exists()
        status, _ = _run_child(run_dir, "none", 0, total_steps, kind, store)
        same = status == 0 and _same(_final(run_dir), references[kind])
        rows.append({"phase": phase, "at": at, "killed": killed == -signal.SIGKILL,
                     "checkpoint_left": left, "survived": same,
                     "wall_s": round(time.perf_counter() - start, 1)})
        print(f"kill {i + 1:2d}/{kills} {phase:10s} at {at:>7}: "
              f"{'killed' if rows[-1]['killed'] else 'not killed (ran past)'}, resumed "
              f"{'from a checkpoint' if left else 'from the start'}: "
              f"{'bitwise equal' if same else 'DIFFERENT'}", flush=True)
    survived = sum(r["survived"] and r["killed"] for r in rows)
    return {"survived": survived, "killed": sum(r["killed"] for r in rows), "tried": kills,
            "settings": {**SETTINGS, "total_steps": total_steps}, "seed": seed, "runs": rows}


def main() -> None:
    if sys.argv[1:2] == ["child"]:
        run_dir, phase, at, total_steps, compiled, counts = sys.argv[2:8]
        return child(run_dir, phase, float(at), int(total_steps), compiled == "1", counts)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="of the kill points")
    parser.add_argument("--total-steps", type=int, default=SETTINGS["total_steps"])
    parser.add_argument("--phases", nargs="+", default=list(PHASES), choices=PHASES)
    parser.add_argument("--json", type=Path, help="where to write the results")
    args = parser.parse_args()
    from bench.common.results_md import machine
    result = {"machine": machine(), **campaign(args.kills, args.seed, args.total_steps,
                                               tuple(args.phases))}
    print(f"survived {result['survived']} of {result['tried']} "
          f"({result['killed']} killed; the rest ran past their kill point)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
