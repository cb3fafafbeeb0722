"""Where the time goes, in the terminal: each trial's phases (median, its interval, its share of the
end-to-end time), the phase split of an overhead ("+4.1 s: scheduling +2.2 s, image pull +1.5 s"),
and the phase gates that failed."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Group, RenderableType

from ..analyse.startup import CHAIN_METRICS, PhaseGate, PhaseSplit, TrialPhases
from ..timeline.phases import PHASE_NAMES
from .tables import label, new_table, params_split
from .text import cell


def phase_name(metric: str) -> str:
    """A phase's short name (``image_pull_seconds`` → ``image pull``)."""
    return PHASE_NAMES.get(metric, metric.removesuffix("_seconds").replace("_", " "))



def seconds(value: float, signed: bool = False) -> str:
    """``1.23 s``, ``45 ms``, ``2.1 min`` (``+`` in front with ``signed``); ``–`` for nan."""
    if not math.isfinite(value):
        return "–"
    sign = ("+" if value >= 0 else "−") if signed else ("−" if value < 0 else "")
    v = abs(value)
    text = f"{v * 1000:.0f} ms" if v < 0.1 else f"{v:.2f} s" if v < 10 else f"{v:.1f} s" if v < 120 else f"{v / 60:.1f} min"
    return sign + text


def _value(metric: str, value: float) -> str:
    return f"{value * 100:.1f}%" if metric == "overhead_fraction" and math.isfinite(value) else seconds(value)


def startup_tables(trials: Sequence[TrialPhases], experiment_id: str) -> RenderableType:
    """One table per trial: each phase's median, its interval and its share of the end-to-end time."""
    _, swept = params_split([t.params for t in trials])
    blocks: list[RenderableType] = []
    for trial in trials:
        title = f"phases of {experiment_id}" + (f": {label(trial.params, swept)}" if swept else "")
        table = new_table(title)
        for name, justify in (("phase", "left"), ("median", "right"), ("95% CI of median", "right"),
                              ("of end to end", "right"), ("runs", "right")):
            table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        total = trial.get("end_to_end_seconds")
        for phase in trial.phases:
            share = phase.median / total.median if total and total.median > 0 and phase.metric.endswith("_seconds") \
                and phase.metric in CHAIN_METRICS else math.nan
            interval = "–" if math.isnan(phase.low) else f"{_value(phase.metric, phase.low)} … {_value(phase.metric, phase.high)}"
            table.add_row(cell(phase_name(phase.metric)), _value(phase.metric, phase.median), interval,
                          "" if math.isnan(share) else f"{share * 100:.0f}%", str(phase.n))
        blocks.append(table)
    if not blocks:
        blocks.append(cell("no run of this experiment has a timeline (phases come with kubebench ≥ 0.2's runs)"))
    return Group(*blocks)


def overhead_split(split: PhaseSplit) -> str:
    """``+4.1 s: scheduling +2.2 s, image pull +1.5 s, rendezvous +0.4 s`` (the phases that make the difference)."""
    main = split.main()
    return f"{seconds(split.total, signed=True)}: " + (
        ", ".join(f"{phase_name(m)} {seconds(d, signed=True)}" for m, d in main) or "no phase differs")


def gate_lines(failed: Sequence[tuple[TrialPhases, PhaseGate, float]], swept: Sequence[str]) -> list[str]:
    """One line per gate a trial did not pass."""
    return [f"{label(trial.params, swept) or trial.trial_id}: {phase_name(gate.metric)} {gate.stat} "
            f"{_value(gate.metric, value)} (limit {gate.op} {_value(gate.metric, gate.limit)}; {gate.text})"
            for trial, gate, value in failed]
