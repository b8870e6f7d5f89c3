"""Published returns on Gymnasium MuJoCo v4, not measured here: the seed means at the evaluation
nearest each budget, from the authors' result files (named per method)."""

# MR.Q (Fujimoto et al. 2025), 10 seeds: facebookresearch/MRQ results/gym_results.txt
MRQ = {"HalfCheetah": {100_000: 7872, 300_000: 10835, 1_000_000: 12940},
       "Hopper": {100_000: 2249, 300_000: 2469, 1_000_000: 2693},
       "Walker2d": {100_000: 3127, 300_000: 4509, 1_000_000: 6040},
       "Ant": {100_000: 2801, 300_000: 4674, 1_000_000: 6902},
       "Humanoid": {100_000: 522, 300_000: 4997, 1_000_000: 10224}}
# CleanRL's SAC at 1M steps
CLEANRL_SAC_1M = {"HalfCheetah": 9635, "Hopper": 2310, "Walker2d": 3591, "Humanoid": 4996}
# at 100,000 steps: (method, UTD and seeds, source) -> {task: return}
AT_100K = {
    ("FlashSAC", "UTD 1, 5 seeds", "Holiday-Robot/FlashSAC results/stateRL_cpusim/FlashSAC.csv"):
        {"HalfCheetah": 9815, "Hopper": 2121, "Walker2d": 3299, "Ant": 3196, "Humanoid": 6138},
    ("XQC", "10 seeds", "Holiday-Robot/FlashSAC results/stateRL_cpusim/baseline/XQC.csv"):
        {"HalfCheetah": 8597, "Hopper": 2828, "Walker2d": 3612, "Ant": 3018, "Humanoid": 3265},
    ("CrossQ", "UTD 1, 10 seeds", "dojeon-ai/SimbaV2 results/baseline/"):
        {"HalfCheetah": 8112, "Hopper": 2764, "Walker2d": 3914, "Ant": 2299, "Humanoid": 2603},
    ("SimbaV2", "UTD 2, 10 seeds", "dojeon-ai/SimbaV2 results/"):
        {"HalfCheetah": 7328, "Hopper": 2821, "Walker2d": 3023, "Ant": 3881, "Humanoid": 1329},
    ("SimbaV2", "UTD 1, 5 seeds", "dojeon-ai/SimbaV2 results/"):
        {"HalfCheetah": 6527, "Hopper": 893, "Walker2d": 1775, "Ant": 2706, "Humanoid": 697},
    ("MR.Q", "UTD 1, 10 seeds", "facebookresearch/MRQ results/gym_results.txt"):
        {task: figures[100_000] for task, figures in MRQ.items()},
    ("SAC", "UTD 1, 10 seeds", "dojeon-ai/SimbaV2 results/baseline/"):
        {"HalfCheetah": 6156, "Hopper": 1103, "Walker2d": 690, "Ant": 747, "Humanoid": 632},
}
# the lowest and highest seed at 100,000 steps, where a result file gives each seed
SEED_RANGE_100K = {
    ("FlashSAC", "UTD 1, 5 seeds"):
        {"HalfCheetah": (9685, 10101), "Hopper": (854, 3557), "Walker2d": (562, 5140),
         "Ant": (1402, 5816), "Humanoid": (1834, 7884)},
    ("XQC", "10 seeds"):
        {"HalfCheetah": (6363, 10809), "Hopper": (523, 3537), "Walker2d": (355, 5343),
         "Ant": (11, 5874), "Humanoid": (389, 7355)},
}
# the published method a funcsac preset is measured against (its paper's own figure)
METHOD_OF_PRESET = {"sac": ("SAC", "UTD 1, 10 seeds"), "crossq": ("CrossQ", "UTD 1, 10 seeds"),
                    "simbav2": ("SimbaV2", "UTD 2, 10 seeds"),
                    "simbav2-utd1": ("SimbaV2", "UTD 1, 5 seeds"),
                    "flashsac": ("FlashSAC", "UTD 1, 5 seeds")}


def published_at_100k(preset: str, task: str):
    """``(label, return, source)`` of the published 100k figure for ``preset`` on ``task``
    (``HalfCheetah-v5`` or ``HalfCheetah``), or None."""
    method = METHOD_OF_PRESET.get(preset)
    for (name, setting, source), figures in AT_100K.items():
        if method == (name, setting) and task.split("-")[0] in figures:
            return f"{name} ({setting}, v4)", figures[task.split("-")[0]], source
    return None


def published_table() -> str:
    """The published 100k figures, one row a method, with the seeds' range where known
    (Markdown)."""
    tasks = ["HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid"]
    lines = ["| method | " + " | ".join(tasks) + " | source |", "|---" * (len(tasks) + 2) + "|"]
    for (name, setting, source), figures in AT_100K.items():
        ranges = SEED_RANGE_100K.get((name, setting), {})

        def cell(task: str) -> str:
            if task not in figures:
                return "-"
            low_high = ranges.get(task)
            return f"{figures[task]:,}" + (f" ({low_high[0]:,} to {low_high[1]:,})"
                                           if low_high else "")
        lines.append(f"| {name} ({setting}) | " + " | ".join(map(cell, tasks))
                     + f" | `{source}` |")
    return "\n".join(lines)
