"""DrQ's preset: SAC from pixels through the image encoder."""
from __future__ import annotations

from ...registry import register_preset

# DrQ (Kostrikov, Yarats and Fergus 2020; denisyarats/drq config.yaml, drq.py): from pixels,
# 84x84 frames, 3 stacked, 50 encoder features, 1024x1024 actor and critics (orthogonal
# init, utils.weight_init), batch 512 (the paper's; config.yaml's comment), a replay buffer
# of 100,000, learning rates 1e-3, initial temperature 0.1, log-std in [-10, 2], random shifts
# of 4 pixels, K = M = 2 shifted views of each transition (the target averaged over two, the
# loss on both; update_critic), an actor step every 2 critic steps, 1,000 random steps
# first, the targets (the critics with their encoder) averaged every 2 steps at tau 0.01.
# Not carried over: action repeat (DMC's 4 or 8: a property of the task, --action-repeat),
# the actor's own Linear + LayerNorm head over the shared convolutions (here the actor
# reads the critics' features, detached).
SETTINGS = {"pixels": True, "image_size": 84, "frame_stack": 3, "image_features": 50,
            "image_pad": 4, "views": 2, "hidden_sizes": (1024, 1024), "batch_size": 512,
            "buffer_size": 100_000, "actor_lr": 1e-3, "critic_lr": 1e-3, "alpha_lr": 1e-3,
            "init_alpha": 0.1, "tau": 0.01, "target_update_every": 2, "log_std_min": -10.0,
            "policy_delay": 2, "learning_starts": 1_000, "weight_init": "orthogonal"}

register_preset("drq", SETTINGS)
