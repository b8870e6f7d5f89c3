"""SAC's preset: the defaults."""
from __future__ import annotations

from ...registry import register_preset

register_preset("sac", {})
