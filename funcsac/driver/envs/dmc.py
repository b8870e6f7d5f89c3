"""DeepMind Control Suite through gymnasium (shimmy's ``dm_control/DOMAIN-TASK-v0`` ids): its
registration on first use, the frames it renders and the action repeats its references use
(``envs.state`` saves its envs' state)."""
from __future__ import annotations

import importlib.util
import logging
import os
from typing import Tuple

import gymnasium as gym

PREFIX = "dm_control/"
# DrQ (Kostrikov et al. 2020, PlaNet's benchmark): cartpole 8, finger and walker 2, others 4
PIXEL_REPEATS, PIXEL_REPEAT = {"cartpole": 8, "finger": 2, "walker": 2}, 4
STATE_REPEAT = 2  # SimbaV2 (dojeon-ai/SimbaV2 configs/env/dmc.yaml: action_repeat 2)


def is_dmc(env_id: str) -> bool:
    return env_id.startswith(PREFIX)


def _domain(env_id: str) -> str:
    return env_id[len(PREFIX):].split("-")[0]


def register_dmc(env_id: str) -> None:
    """Register DeepMind Control's ids with gymnasium (importing shimmy) when ``env_id`` is one
    and they are not yet; rendering headless through EGL unless ``MUJOCO_GL`` says otherwise.
    ``ValueError`` naming the extra where dm-control or shimmy is missing."""
    if not is_dmc(env_id) or env_id in gym.registry:
        return
    missing = [name for name, module in (("dm-control", "dm_control"), ("shimmy", "shimmy"))
               if importlib.util.find_spec(module) is None]
    if missing:
        raise ValueError(f"cannot create environment {env_id!r}: DeepMind Control needs "
                         f"{' and '.join(missing)} (pip install 'funcsac[dmc]')")
    os.environ.setdefault("MUJOCO_GL", "egl")
    handlers = list(logging.root.handlers)
    import shimmy  # noqa: F401  (registers the dm_control/ ids; envs.state saves their state)
    for handler in set(logging.root.handlers) - set(handlers):  # set by dm_control's imports
        logging.root.removeHandler(handler)


class FoldedSeed(gym.Wrapper):
    """Reset seeds folded into ``[0, 2**32)``, the range of the ``RandomState`` a DeepMind
    Control task draws from (funcsac's seeds have 63 bits)."""

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=None if seed is None else seed % 2**32, options=options)


def reference_action_repeat(env_id: str, pixels: bool) -> Tuple[int, str]:
    """The action repeat the references use for ``env_id`` and where it comes from: DrQ's per
    domain from pixels, SimbaV2's 2 from states on DeepMind Control; 1 elsewhere."""
    if not is_dmc(env_id):
        return 1, "no repeat outside DeepMind Control"
    if pixels:
        return (PIXEL_REPEATS.get(_domain(env_id), PIXEL_REPEAT),
                "DrQ's for DeepMind Control from pixels")
    return STATE_REPEAT, "SimbaV2's for DeepMind Control from states"


def render_kwargs(env_id: str, size: int) -> dict:
    """``gym.make``'s arguments for ``size x size`` frames of a DeepMind Control task (camera 2
    for quadruped, else 0, as DrQ)."""
    camera = 2 if _domain(env_id) == "quadruped" else 0
    return {"render_mode": "rgb_array",
            "render_kwargs": {"width": size, "height": size, "camera_id": camera}}
