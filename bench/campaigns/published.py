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
    # the 2026 rows: each file's evaluation at 100,000 steps (REDQ's and DroQ's at 99,996)
    ("DR.Q", "10 seeds", "dmksjfl/DR.Q results/drq.csv (cc307a5)"):
        {"HalfCheetah": 9439, "Hopper": 2258, "Walker2d": 4151, "Ant": 3817, "Humanoid": 1102},
    ("FoG", "10 seeds", "dmksjfl/DR.Q results/fog.csv (cc307a5)"):
        {"HalfCheetah": 7596, "Hopper": 1988, "Walker2d": 2419, "Ant": 3336, "Humanoid": 1264},
    ("SimbaV2", "UTD 8, 5 seeds",
     "dojeon-ai/SimbaV2 results/baseline/simbaV2_utd8.csv (14fafb2)"):
        {"HalfCheetah": 7505, "Hopper": 2927, "Walker2d": 4488, "Ant": 3942, "Humanoid": 1825},
    ("REDQ", "UTD 20, 10 seeds", "dojeon-ai/SimbaV2 results/baseline/redq_utd20.csv (14fafb2)"):
        {"HalfCheetah": 7823, "Hopper": 2750, "Walker2d": 3459, "Ant": 3287, "Humanoid": 1319},
    ("DroQ", "UTD 20, 10 seeds", "dojeon-ai/SimbaV2 results/baseline/droq_utd20.csv (14fafb2)"):
        {"HalfCheetah": 7744, "Hopper": 1813, "Walker2d": 2277, "Ant": 1365, "Humanoid": 1278},
}
# the lowest and highest seed at 100,000 steps, where a result file gives each seed
SEED_RANGE_100K = {
    ("FlashSAC", "UTD 1, 5 seeds"):
        {"HalfCheetah": (9685, 10101), "Hopper": (854, 3557), "Walker2d": (562, 5140),
         "Ant": (1402, 5816), "Humanoid": (1834, 7884)},
    ("XQC", "10 seeds"):
        {"HalfCheetah": (6363, 10809), "Hopper": (523, 3537), "Walker2d": (355, 5343),
         "Ant": (11, 5874), "Humanoid": (389, 7355)},
    ("DR.Q", "10 seeds"):
        {"HalfCheetah": (8809, 10272), "Hopper": (967, 3305), "Walker2d": (1786, 5085),
         "Ant": (1444, 5588), "Humanoid": (184, 2350)},
    ("FoG", "10 seeds"):
        {"HalfCheetah": (5736, 9875), "Hopper": (1112, 3386), "Walker2d": (-2, 5005),
         "Ant": (1004, 5240), "Humanoid": (913, 1942)},
    ("SimbaV2", "UTD 8, 5 seeds"):
        {"HalfCheetah": (6029, 9979), "Hopper": (1939, 3577), "Walker2d": (2280, 5542),
         "Ant": (1212, 4962), "Humanoid": (853, 3211)},
    ("REDQ", "UTD 20, 10 seeds"):
        {"HalfCheetah": (7132, 9319), "Hopper": (1237, 3613), "Walker2d": (1502, 4895),
         "Ant": (894, 4725), "Humanoid": (589, 4936)},
    ("DroQ", "UTD 20, 10 seeds"):
        {"HalfCheetah": (5819, 9345), "Hopper": (676, 3306), "Walker2d": (237, 4470),
         "Ant": (97, 3229), "Humanoid": (649, 3066)},
}
# the published method a funcsac preset is measured against (its paper's own figure)
METHOD_OF_PRESET = {"sac": ("SAC", "UTD 1, 10 seeds"), "crossq": ("CrossQ", "UTD 1, 10 seeds"),
                    "simbav2": ("SimbaV2", "UTD 2, 10 seeds"),
                    "simbav2-utd1": ("SimbaV2", "UTD 1, 5 seeds"),
                    "flashsac": ("FlashSAC", "UTD 1, 5 seeds"),
                    "flashsac-published": ("FlashSAC", "UTD 1, 5 seeds"),
                    "redq": ("REDQ", "UTD 20, 10 seeds"), "droq": ("DroQ", "UTD 20, 10 seeds")}


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
