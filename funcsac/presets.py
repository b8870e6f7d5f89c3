"""Named variants of SAC as settings of the same pieces (SACConfig fields, plus the driver's
``utd``: gradient steps per environment step)."""
from __future__ import annotations

PRESETS = {
    "sac": {},
    # REDQ (Chen et al. 2021): 10 critics, target min over a random 2, UTD 20, one actor step per
    # environment step against the mean of all critics.
    "redq": {"num_critics": 10, "num_target_critics": 2, "actor_q_reduction": "mean",
             "policy_delay": 20, "utd": 20},
    # DroQ (Hiraoka et al. 2022): 2 critics with dropout 0.01 and LayerNorm, UTD 20.
    "droq": {"num_critics": 2, "critic_dropout": 0.01, "critic_layer_norm": True,
             "actor_q_reduction": "mean", "policy_delay": 20, "utd": 20},
}


def preset(name: str) -> dict:
    """The settings of a named variant (a new dict); ``ValueError`` for an unknown name."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
    return dict(PRESETS[name])
