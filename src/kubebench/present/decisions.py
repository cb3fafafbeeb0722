"""Sequential decisions (``kubebench run --decide-against``) as people read them: a table per
experiment, one line per trial, and the summary every view of a decision ends with — the verdict,
how many runs it took, and that it was sequential (:mod:`kubebench.numerics.sequential`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from ..store.decision_records import DecisionRecord
from .numbers import plural
from .tables import fixed_line, new_table, param_of, params_split
from .text import cell, safe

VERDICT_STYLE = {"improved": "green", "regressed": "bold red", "unchanged": "", "inconclusive": "yellow"}


def change_text(d: DecisionRecord) -> str:
    """``-3.4% (90% CI -5.1% … -1.7%)``: the change candidate/base and its repeated interval; "–" without one."""
    if d.ratio is None:
        return "–"
    text = f"{d.ratio - 1:+.1%}"
    if d.ci_low is not None and d.ci_high is not None:
        text += f" ({1 - 2 * d.alpha:.0%} CI {d.ci_low - 1:+.1%} … {d.ci_high - 1:+.1%})"
    return text


def runs_text(d: DecisionRecord) -> str:
    """``4 of ≤10 runs, sequential``."""
    return f"{d.runs} of ≤{d.max_runs} runs, {'sequential' if d.sequential else 'fixed'}"


def decision_line(d: DecisionRecord) -> str:
    """One trial's decision in a sentence: ``regressed after 4 of ≤10 runs (sequential, against …)``."""
    return f"{d.verdict} after {d.runs} of ≤{d.max_runs} runs ({'sequential' if d.sequential else 'fixed'}, " \
           f"against {d.against}): {d.reason}"


def design_text(d: DecisionRecord) -> str:
    """The rule's error rates in words."""
    return (f"false regressed/improved ≤ {d.alpha:.0%} each; unchanged = the {1 - 2 * d.beta:.0%} CI within "
            f"±{d.margin * 100:g}% (a change of {d.margin * 100:g}% is called unchanged ≤ {d.beta:.0%} of the time)")


def summary(decisions: Sequence[DecisionRecord]) -> str:
    """``3 trials decided in 14 runs (a fixed design: 30): 2 unchanged, 1 regressed``."""
    used = sum(d.runs for d in decisions)
    fixed = sum(d.max_runs for d in decisions)
    counts: dict[str, int] = {}
    for d in decisions:
        counts[d.verdict] = counts.get(d.verdict, 0) + 1
    tally = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"{plural(len(decisions), 'trial')} decided in {plural(used, 'run')} (a fixed design: {fixed}): {tally}"


def decisions_table(decisions: Sequence[DecisionRecord]) -> RenderableType:
    """The decisions of one experiment: a row per trial, then the summary and the rule."""
    first = decisions[0]
    fixed, swept = params_split([d.params for d in decisions])
    table = new_table(f"sequential decisions on {first.metric} against {first.against}")
    for name in swept:
        table.add_column(safe(name), overflow="fold", min_width=len(name))
    table.add_column("verdict", no_wrap=True, min_width=len("inconclusive"))
    table.add_column("change", no_wrap=True)
    table.add_column("runs", justify="right", no_wrap=True)
    table.add_column("base", justify="right", no_wrap=True)
    for d in decisions:
        cells: list[RenderableType] = [cell(param_of(d.params, p)) for p in swept]
        cells += [Text(d.verdict, style=VERDICT_STYLE[d.verdict]), change_text(d), f"{d.runs}/{d.max_runs}",
                  str(d.base_runs)]
        table.add_row(*cells)
    table.above = [line for line in (fixed_line(fixed),) if line is not None]
    lines = [cell(summary(decisions)), cell("sequential: " + design_text(first), style="dim")]
    lines += [cell(f"{_who(d, swept)}: {d.reason}", style="dim") for d in decisions if d.verdict != "unchanged"]
    return Group(table, *lines)


def _who(d: DecisionRecord, swept: Sequence[str]) -> str:
    return ", ".join(f"{k}={param_of(d.params, k)}" for k in swept) or "the trial"
