"""``kubebench check``'s outcome as a terminal table, as a Markdown summary (CI job summaries) and as
JUnit XML. Each names a trial by the parameters that vary between the trials only, and writes
numbers with SI prefixes and the metric's unit (``3.40 M ops/s``)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..analyse.compare import ci_label
from ..analyse.family import CORRECTIONS, Outcome
from .history import params_text, percent
from .numbers import plural, si
from .tables import label, params_split
from .text import markdown_text, xml_text

if TYPE_CHECKING:
    from rich.console import RenderableType

_ICON = {"regressed": "🔴", "improved": "🟢", "unchanged": "⚪", "inconclusive": "🟡"}


def _interval(o: Outcome) -> str:
    low, high = o.comparison.ratio_ci
    return "–" if math.isnan(low) else f"[{percent(low - 1)}, {percent(high - 1)}]"


def _p(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2g}"


def headline(outcomes: Sequence[Outcome]) -> str:
    """``FAIL: 1 regression beyond its threshold (of 100 tests)`` or ``PASS: …``."""
    failing = sum(o.fails for o in outcomes)
    counts = {v: sum(o.verdict == v for o in outcomes) for v in _ICON}
    told = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    if failing:
        return f"FAIL: {failing} regression{'s' * (failing != 1)} beyond threshold ({told}; {plural(len(outcomes), 'test')})"
    return f"PASS: no regression beyond threshold ({told}; {plural(len(outcomes), 'test')})"


def method(outcomes: Sequence[Outcome], base: str, correction: str, alpha: float) -> str:
    """What the candidate was tested against, and how significance was judged."""
    return (f"Candidate against {base}. Significance over the family of {len(outcomes)} trial × metric tests: "
            f"{CORRECTIONS[correction]}, α = {alpha:g}; a test fails on a significant regression beyond its threshold.")


def markdown(outcomes: Sequence[Outcome], title: str, base: str, correction: str, alpha: float,
             units: Mapping[str, str] | None = None) -> str:
    """A Markdown summary: headline, method, the tests with a verdict, then every test folded."""
    # the title (series · id), the base, the trials and the metrics are of user or store origin: escaped
    lines = [f"### kubebench check: {markdown_text(title)}", "", f"**{headline(outcomes)}**", "",
             method(outcomes, markdown_text(base), correction, alpha), ""]
    notable = [o for o in outcomes if o.verdict in ("regressed", "improved")]
    header = [f"| | metric | trial | base median | candidate median | change | {ci_label(alpha)} | adj. p | threshold |",
              "|---|---|---|---:|---:|---:|---|---:|---:|"]
    swept = _swept(outcomes)
    if notable:
        lines += header + [_row(o, swept, units or {}) for o in notable] + [""]
    lines += ["<details><summary>All tests</summary>", ""] + header + [_row(o, swept, units or {}) for o in outcomes]
    return "\n".join(lines + ["", "</details>", ""])


def _swept(outcomes: Sequence[Outcome]) -> list[str]:
    """The parameters that tell the tested trials apart (the others are the same in every test)."""
    return params_split([o.test.params for o in outcomes])[1]


def _cells(o: Outcome, swept: Sequence[str], units: Mapping[str, str]) -> list[str]:
    c, unit = o.comparison, units.get(o.test.metric, "")
    return [o.test.metric, label(o.test.params, swept), si(c.base.median, unit), si(c.candidate.median, unit),
            percent(c.ratio - 1), _interval(o), _p(o.adjusted_p), f"±{o.test.threshold:.1%}"]


def _row(o: Outcome, swept: Sequence[str], units: Mapping[str, str]) -> str:
    metric, trial, *rest = _cells(o, swept, units)
    code = f"`{metric}`" if _METRIC_NAME.fullmatch(metric) else markdown_text(metric)
    cells = ["❌" if o.fails else _ICON[o.verdict], code, markdown_text(trial), *(markdown_text(c) for c in rest)]
    return "| " + " | ".join(cells) + " |"


#: A metric name as the metric protocol has it: shown as code in Markdown; any other is escaped text.
_METRIC_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/-]*")


#: Tests a terminal table lists, the failing and changed ones first; the Markdown and JUnit have all.
SHOWN_TESTS = 40
_ORDER = {"regressed": 0, "improved": 1, "inconclusive": 2, "unchanged": 3}
_STYLE = {"regressed": "bold red", "improved": "green", "inconclusive": "yellow", "unchanged": ""}


def check_table(outcomes: Sequence[Outcome], title: str, base: str, correction: str, alpha: float,
                units: Mapping[str, str] | None = None) -> RenderableType:
    """The outcome for a terminal: the headline, the method, and a table of the tests (failing first)."""
    from rich.console import Group
    from rich.text import Text

    from .tables import new_table
    from .text import cell, safe_line

    failing = any(o.fails for o in outcomes)
    table = new_table(f"kubebench check: {title}")
    table.add_column("verdict", no_wrap=True)
    table.add_column("metric", no_wrap=True)
    table.add_column("trial", no_wrap=True)
    for name in ("base", "candidate", "change", ci_label(alpha), "adj. p", "threshold"):
        table.add_column(name, justify="right", no_wrap=True)
    swept = _swept(outcomes)
    ordered = sorted(outcomes, key=lambda o: (not o.fails, _ORDER.get(o.verdict, 4)))
    lines = []
    for o in ordered[:SHOWN_TESTS]:
        verdict = Text("FAIL" if o.fails else o.verdict, style="bold red" if o.fails else _STYLE.get(o.verdict, ""))
        metric, trial, base_median, candidate_median, change, interval, p, limit = _cells(o, swept, units or {})
        metric, trial = safe_line(metric), safe_line(trial)  # one line each, whatever a parameter holds
        table.add_row(verdict, cell(metric), cell(trial), base_median, candidate_median, change, interval, p, limit)
        line = Text.assemble(verdict, " ", cell(f"{metric} · {trial}: {base_median} → {candidate_median}, {change} "
                                                 f"{interval}, adj. p {p}, threshold {limit}"))
        lines.append(line)
    more = [Text(f"… and {len(ordered) - SHOWN_TESTS} more tests (-f markdown or --junit lists every one)",
                 style="dim")] if len(ordered) > SHOWN_TESTS else []
    from .tables import Fitted, _title_lines

    tests = Fitted(table, Group(*_title_lines(table), *lines))
    return Group(Text(headline(outcomes), style="bold red" if failing else "bold green"),
                 Text(method(outcomes, base, correction, alpha), style="dim"), tests, *more)


def junit(outcomes: Sequence[Outcome], suite: str) -> bytes:
    """JUnit XML: one test case per trial × metric; a regression beyond its threshold is a failure."""
    root = ET.Element("testsuites", name="kubebench check")
    element = ET.SubElement(root, "testsuite", name=xml_text(suite), tests=str(len(outcomes)),
                            failures=str(sum(o.fails for o in outcomes)), errors="0",
                            skipped=str(sum(o.verdict == "inconclusive" for o in outcomes)))
    for o in outcomes:
        case = ET.SubElement(element, "testcase", classname=xml_text(f"{suite}.{o.test.metric}"),
                             name=xml_text(f"{o.test.metric}[{params_text(o.test.params)}]"))
        text = xml_text(f"{o.verdict}: {percent(o.comparison.ratio - 1)} {_interval(o)}, adjusted p "
                        f"{_p(o.adjusted_p)}, threshold ±{o.test.threshold:.1%}")
        if o.fails:
            ET.SubElement(case, "failure", message=text, type="regression").text = text
        elif o.verdict == "inconclusive":
            ET.SubElement(case, "skipped", message="fewer than 2 values on a side")
        ET.SubElement(case, "system-out").text = text
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
