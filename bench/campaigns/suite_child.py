"""One run of the MuJoCo campaign in this process, for ``bench/campaigns/suite.py``.

    python -m bench.campaigns.suite_child funcsac TASK ALGO BUDGET SEEDS RUN_DIR OUT.json [--eager]
    python -m bench.campaigns.suite_child sbx TASK ALGO BUDGET SEED RUN_DIR OUT.json

funcsac trains an agent for each of ``SEEDS`` (consecutive, comma-separated: ``1,2,3``), vmapped
in one process in ``RUN_DIR``, resuming from its checkpoint when the directory holds one, with
its preset's settings for the task (``ALGO@sbx``: at the sbx peer's settings, ``LIKE_SBX``). sbx
trains one seed (sbx's SAC, CrossQ, TQC, or its SAC as DroQ) with 256x256 networks, from the
start. Both evaluate every ``EVAL_EVERY`` environment steps with ``EVAL_EPISODES`` deterministic
episodes, use batch 256, a 1M buffer and start learning after ``learning_starts(BUDGET)`` random
steps (a preset that sets its own batch or start, as flashsac and bro do, keeps it:
``campaign_settings``). The JSON holds the evaluation curve as ``[wall seconds, env step,
[return per seed]]`` rows (wall: since the run's first piece began, counting earlier pieces),
the phase split, and the peak RSS of this process.
"""
import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import json
import sys
import time
from pathlib import Path

from bench.common.rss import peak_rss_mib
from bench.campaigns.e2e_child import evaluate  # episodes on seeds 10,000, 10,001, ... as e2e.py's

PROCESS_START = time.perf_counter()
EVAL_EVERY, EVAL_EPISODES = 10_000, 10
PIECES = "suite-pieces.json"  # wall seconds of the run's earlier pieces (written by suite.py)
CURVE = "suite-curve.json"
# sbx's algorithm for each peer name, with its settings over sbx's defaults: DroQ is sbx's SAC
# with dropout and LayerNorm critics, 20 gradient steps an env step and an actor step every 20
# (sbx's README, "Note about DroQ"; sbx >= 0.16 has no DroQ class); SimBa is sbx's SAC with its
# SimbaPolicy (sbx/sac/policies.py: SimBa's residual blocks, AdamW)
SBX = {"sac": ("SAC", {}), "crossq": ("CrossQ", {}), "tqc": ("TQC", {}),
       "droq": ("SAC", {"gradient_steps": 20, "policy_delay": 20,
                        "policy_kwargs": {"dropout_rate": 0.01, "layer_norm": True}}),
       "simba": ("SAC", {"policy": "SimbaPolicy"})}
# funcsac set to a peer's own settings, by name: (the sbx algorithm it is compared with, the
# preset, the settings over it, what still differs from the sbx run), at the campaign's 256 x 256
# networks on both sides. sbx's actors (sbx/common/policies.py): the log-std clipped to [-20, 2],
# flax's Dense init (lecun-normal, zero biases). SAC (sbx/sac/sac.py): learning rates 3e-4 for
# the actor, the critics and the temperature. CrossQ (sbx/crossq/crossq.py): the crossq preset's
# settings (sbx's) at 256-wide critics. TQC (sbx/tqc): 2 critics of 25 quantiles, 2 dropped per
# critic on every task. DroQ (sbx's SAC as above): dropout 0.01 on every task, the target entropy
# -act_dim, the actor against the min of the critics, its step after the 20th critic step of an
# env step (sbx/sac/sac.py's policy_delay_offset). SAC with SimBa networks (sbx's
# SimbaSACPolicy, sbx/common/policies.py and jax_layers.py): sbx's SAC on networks of 2 residual
# blocks of width 256 (an embedding, per block x + Dense(ReLU(Dense_4w(LayerNorm(x)))), a final
# LayerNorm) for the actor and each critic, no observation normalisation, optax.adamw's default
# weight decay 1e-4 on every parameter of both (the temperature's Adam without).
_SBX_ACTOR = {"log_std_squash": "clip", "log_std_min": -20.0, "weight_init": "lecun_normal"}
_WIDTHS = {"hidden_sizes": (256, 256), "actor_hidden_sizes": (256, 256)}
_NONE = "none known"
LIKE_SBX = {
    "sac@sbx": ("sac", "sac", {"actor_lr": 3e-4, "critic_lr": 3e-4, "alpha_lr": 3e-4,
                               **_SBX_ACTOR}, _NONE),
    "crossq@sbx": ("crossq", "crossq", {**_WIDTHS}, _NONE),
    "tqc@sbx": ("tqc", "tqc", {**_WIDTHS, **_SBX_ACTOR, "num_critics": 2,
                               "drop_quantiles": 2}, _NONE),
    "droq@sbx": ("droq", "droq", {**_SBX_ACTOR, "critic_dropout": 0.01, "target_entropy": None,
                                  "actor_q_reduction": "min"}, _NONE),
    "simba@sbx": ("simba", "sac", {"actor_lr": 3e-4, "critic_lr": 3e-4, "alpha_lr": 3e-4,
                                   "log_std_squash": "clip", "log_std_min": -20.0,
                                   "network": "simba", **_WIDTHS, "weight_decay": 1e-4,
                                   "weight_decay_on": "all"},
                  "the embedding and the heads start orthogonal (sbx: lecun-normal; the blocks "
                  "He-normal on both sides)"),
}
# what a preset run with its own settings sets apart from sbx's defaults for the same algorithm
OWN_SETTINGS = {
    "sac": "funcsac's defaults (CleanRL's): critic and temperature learning rates 1e-3 (sbx: "
           "3e-4), the log-std tanh-squashed to [-5, 2] (sbx: clipped to [-20, 2]), torch's "
           "initialisation (sbx: lecun-normal)",
    "crossq": "critics 2 x 1024, sbx's own default (sbx here: 256 x 256)",
    "tqc": "5 critics 3 x 512, the dropped quantiles per task (sbx: 2 critics 256 x 256, 2 "
           "dropped), torch's initialisation (sbx: lecun-normal)",
}
# a preset with one or two settings changed, by name: (the preset, the settings over it)
VARIANTS = {
    # the first name of flashsac-published (flashsac with the actor's head of the code that ran
    # FlashSAC's published results), which the campaign's earlier rows carry
    "flashsac-unit-head": ("flashsac-published", {}),
    # flashsac with its random actions before learning held as the policy's noise
    "flashsac-held-random": ("flashsac", {"hold_random_actions": True}),
}
# any algorithm of the campaign with this suffix: the same run with bfloat16 products
# (--precision bf16), beside the same sbx runs
BF16 = "-bf16"


def peer_of(algo: str) -> str:
    """The sbx algorithm a funcsac algorithm of the campaign is compared with."""
    algo = algo.removesuffix(BF16)
    return (LIKE_SBX[algo][0] if algo in LIKE_SBX else VARIANTS[algo][0] if algo in VARIANTS
            else algo)


def differs_from_sbx(algo: str) -> str:
    """What a funcsac run of ``algo`` sets apart from its sbx peer's run (``"-"`` where sbx has
    no such algorithm), beyond the batch and the random steps both sides share."""
    bf16 = algo.endswith(BF16)
    algo = algo.removesuffix(BF16)
    if algo in LIKE_SBX:
        differs = LIKE_SBX[algo][3]
    elif peer_of(algo) not in SBX:
        return "-"
    else:  # a preset with its own settings: its table in docs/algorithms.md
        differs = OWN_SETTINGS.get(algo, f"the {algo} preset's own settings (docs/algorithms.md)")
    if not bf16:
        return differs
    return "products in bf16 (sbx: fp32)" + ("" if differs == _NONE else f"; {differs}")


def learning_starts(budget: int) -> int:
    """Random steps before learning: 5,000 (as the peers' MuJoCo settings), or a quarter of a
    smaller budget."""
    return min(5_000, budget // 4)


def eval_every(budget: int) -> int:
    return min(EVAL_EVERY, budget // 4)


def earlier_wall(run_dir: Path) -> float:
    path = run_dir / PIECES
    return sum(json.loads(path.read_text())) if path.exists() else 0.0


def preset_and_settings(algo: str) -> tuple:
    """The preset a campaign algorithm runs and its settings over that preset."""
    if algo.endswith(BF16):
        name, settings = preset_and_settings(algo.removesuffix(BF16))
        return name, {**settings, "precision": "bf16"}
    return (LIKE_SBX[algo][1:3] if algo in LIKE_SBX else VARIANTS[algo] if algo in VARIANTS
            else (algo, {}))


def campaign_settings(task: str, algo: str, budget: int, seeds: list) -> dict:
    """What a funcsac run of the campaign sets over its preset: the task, the budget, the seeds
    (consecutive: the first and how many), the evaluation, and the sbx side's batch (256) and
    random steps (``learning_starts``) unless ``algo`` is a preset that sets its own (its batch
    and start are part of what it is; an ``ALGO@sbx`` run takes the sbx side's)."""
    from funcsac.driver.presets import preset

    name, _ = preset_and_settings(algo)
    own = {} if algo.removesuffix(BF16) in LIKE_SBX else preset(name, task)
    shared = {"learning_starts": learning_starts(budget), "batch_size": 256}
    return {"env_id": task, "total_steps": budget, "eval_every": eval_every(budget),
            "eval_episodes": EVAL_EPISODES, "seed": seeds[0], "num_seeds": len(seeds),
            **{k: v for k, v in shared.items() if k not in own}}


def run_funcsac(task: str, algo: str, budget: int, seeds: list, run_dir: Path,
                eager: bool) -> dict:
    import csv

    import funcsac
    from funcsac.driver.run.checkpoint import CHECKPOINT, load_checkpoint
    from funcsac.driver.presets import preset

    name, settings = preset_and_settings(algo)
    config = funcsac.TrainConfig(**{
        **preset(name, task), **settings, **campaign_settings(task, algo, budget, seeds),
        "checkpoint_every": eval_every(budget), "progress": False, "compile": not eager})
    resume = (run_dir / CHECKPOINT).exists()
    before, curve_path = earlier_wall(run_dir), run_dir / CURVE
    curve = json.loads(curve_path.read_text()) if resume and curve_path.exists() else []
    if resume:  # evaluations after the checkpoint are run again
        done = load_checkpoint(run_dir / CHECKPOINT)["progress"]["env_step"]
        curve = [row for row in curve if row[1] <= done]

    def record(report):
        if report.evals:
            curve.append([before + time.perf_counter() - PROCESS_START, report.step,
                          [e.return_mean for e in report.evals]])
            curve_path.write_text(json.dumps(curve))

    funcsac.train(config, run_dir, resume=resume, callbacks=[record])
    with open(run_dir / "metrics.csv") as f:
        last = list(csv.DictReader(f))[-1]
    split = {k[len("time_"):]: float(last[k]) for k in last if k.startswith("time_")}
    return {"curve": curve, "split": split, "seeds": seeds}


def run_sbx(task: str, algo: str, budget: int, seed: int, run_dir: Path) -> dict:
    """sbx's run of ``algo``: its evaluation curve so far in ``run_dir``'s curve file, as
    funcsac's (an interrupted sbx run starts again from the beginning)."""
    import gymnasium as gym
    import sbx
    from stable_baselines3.common.callbacks import BaseCallback

    curve, every = [], eval_every(budget)
    (run_dir / CURVE).write_text("[]")

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % every == 0:
                ret = evaluate(lambda o: self.model.predict(o, deterministic=True)[0], task,
                               EVAL_EPISODES)
                curve.append([time.perf_counter() - PROCESS_START, self.num_timesteps, [ret]])
                (run_dir / CURVE).write_text(json.dumps(curve))
            return True

    name, settings = SBX[algo]
    net = ({"net_arch": {"pi": [256, 256], "qf": [256, 256]}} if algo == "crossq"
           else {"net_arch": [256, 256]})
    policy = settings.get("policy", "MlpPolicy")
    settings = {**{k: v for k, v in settings.items() if k != "policy"},
                "policy_kwargs": {**net, **settings.get("policy_kwargs", {})}}
    model = getattr(sbx, name)(policy, gym.make(task), batch_size=256,
                               learning_starts=learning_starts(budget), buffer_size=1_000_000,
                               seed=seed, verbose=0, **settings)
    start = time.perf_counter()
    model.learn(total_timesteps=budget, callback=Curve())
    return {"curve": curve, "split": {"learn": time.perf_counter() - start}, "seeds": [seed]}


def main(argv) -> None:
    library, task, algo, budget = argv[0], argv[1], argv[2], int(argv[3])
    seeds, run_dir, out = [int(s) for s in argv[4].split(",")], Path(argv[5]), Path(argv[6])
    if library == "funcsac":
        result = run_funcsac(task, algo, budget, seeds, run_dir, "--eager" in argv)
    else:
        (seed,) = seeds
        result = run_sbx(task, algo, budget, seed, run_dir)
    result["peak_rss_mib"] = peak_rss_mib()
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
