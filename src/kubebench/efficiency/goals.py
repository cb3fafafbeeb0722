"""Which way the efficiency metrics are better, for metrics a spec does not declare (one definition,
used wherever a goal is looked up)."""

from __future__ import annotations

import re

#: Energy and money spent: less is better.
_MINIMIZE = re.compile(r"^(energy_joules|.*_energy_joules|energy_joules_measured|joules_per_.+|cost_usd|usd_per_.+)$")


def default_goal(metric: str) -> str:
    """``minimize`` for energy and cost metrics, else ``maximize``."""
    return "minimize" if _MINIMIZE.match(metric) else "maximize"
