"""``kubebench check``'s outcome as a Markdown summary (CI job summaries) and as JUnit XML."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from ..analyse.family import CORRECTIONS, Outcome
from .history import params_text, percent

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
        return f"FAIL: {failing} regression{'s' * (failing != 1)} beyond threshold ({told}; {len(outcomes)} tests)"
    return f"PASS: no regression beyond threshold ({told}; {len(outcomes)} tests)"


def markdown(outcomes: Sequence[Outcome], title: str, base: str, correction: str, alpha: float) -> str:
    """A Markdown summary: headline, method, the tests with a verdict, then every test folded."""
    lines = [f"### kubebench check: {title}", "", f"**{headline(outcomes)}**", "",
             f"Candidate against {base}. Significance over the family of {len(outcomes)} trial × metric tests: "
             f"{CORRECTIONS[correction]}, α = {alpha:g}; a test fails on a significant regression beyond its threshold.", ""]
    notable = [o for o in outcomes if o.verdict in ("regressed", "improved")]
    header = ["| | metric | trial | base median | candidate median | change | 95% CI | adj. p | threshold |",
              "|---|---|---|---:|---:|---:|---|---:|---:|"]
    if notable:
        lines += header + [_row(o) for o in notable] + [""]
    lines += ["<details><summary>All tests</summary>", ""] + header + [_row(o) for o in outcomes] + ["", "</details>", ""]
    return "\n".join(lines)


def _row(o: Outcome) -> str:
    c = o.comparison
    icon = "❌" if o.fails else _ICON[o.verdict]
    cells = [icon, f"`{o.test.metric}`", params_text(o.test.params).replace("|", "\\|"), f"{c.base.median:.4g}",
             f"{c.candidate.median:.4g}", percent(c.ratio - 1), _interval(o), _p(o.adjusted_p), f"±{o.test.threshold:.1%}"]
    return "| " + " | ".join(cells) + " |"


def junit(outcomes: Sequence[Outcome], suite: str) -> bytes:
    """JUnit XML: one test case per trial × metric; a regression beyond its threshold is a failure."""
    root = ET.Element("testsuites", name="kubebench check")
    element = ET.SubElement(root, "testsuite", name=suite, tests=str(len(outcomes)),
                            failures=str(sum(o.fails for o in outcomes)), errors="0",
                            skipped=str(sum(o.verdict == "inconclusive" for o in outcomes)))
    for o in outcomes:
        case = ET.SubElement(element, "testcase", classname=f"{suite}.{o.test.metric}",
                             name=f"{o.test.metric}[{params_text(o.test.params)}]")
        text = (f"{o.verdict}: {percent(o.comparison.ratio - 1)} {_interval(o)}, adjusted p {_p(o.adjusted_p)}, "
                f"threshold ±{o.test.threshold:.1%}")
        if o.fails:
            ET.SubElement(case, "failure", message=text, type="regression").text = text
        elif o.verdict == "inconclusive":
            ET.SubElement(case, "skipped", message="fewer than 2 values on a side")
        ET.SubElement(case, "system-out").text = text
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
