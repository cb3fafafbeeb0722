"""Base models shared by the spec and by plugins' option models (kept free of plugin imports)."""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict

_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*$")


def parse_duration(value: object) -> float:
    """Seconds in a duration such as ``90``, ``"90s"``, ``"10m"`` or ``"1h30m"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match or not any(match.groups()):
            raise ValueError(f"{value!r} is not a duration; use seconds or e.g. '90s', '10m', '1h30m'")
        hours, minutes, secs = (float(g) if g else 0.0 for g in match.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"duration must be positive and finite (seconds), got {value!r}")
    return seconds


class Model(BaseModel):
    """Base of user-written models: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PluginConfig(Model):
    """Base of the options of a plugin chosen by ``kind``."""

    kind: str
