"""``kubebench check``: the CI gate. Exit 0 pass, 1 a significant regression beyond its threshold, 2 bad input."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, open_store_of


class CorrectionChoice(str, Enum):
    holm = "holm"
    bh = "bh"


class CheckFormat(str, Enum):
    table = "table"
    markdown = "markdown"


@app.command()
@expected_errors
def check(
    targets: Annotated[list[str], typer.Argument(
        help="NAME (a series, or an experiment id: checked against the experiments before it) or BASE CANDIDATE.",
        show_default=False)],
    metric: Annotated[Optional[list[str]], typer.Option("--metric", help="Metric to test; repeatable (default: every declared metric).")] = None,
    correction: Annotated[CorrectionChoice, typer.Option("--correction", help="holm: family-wise error rate; bh: false discovery rate.")] = CorrectionChoice.holm,
    alpha: Annotated[float, typer.Option("--alpha", min=1e-6, max=0.5, help="Error rate of the family.")] = 0.05,
    threshold: Annotated[Optional[float], typer.Option("--threshold", min=0.0, max=1.0, help="Relative change below which a difference is noise (default: the series' calibrated noise, else 0.02).")] = None,
    window: Annotated[int, typer.Option("--window", min=1, help="Experiments of the series before the candidate to compare with.")] = 10,
    junit: Annotated[Optional[Path], typer.Option("--junit", help="Write JUnit XML: one test case per trial × metric.")] = None,
    summary: Annotated[Optional[Path], typer.Option("--summary", envvar="GITHUB_STEP_SUMMARY", help="Append the Markdown summary to this file (GitHub's $GITHUB_STEP_SUMMARY by default).")] = None,
    format: Annotated[CheckFormat, typer.Option("--format", "-f", help="What stdout gets: a table, or the Markdown summary.")] = CheckFormat.table,
    label: Annotated[Optional[list[str]], typer.Option(
        "--label", metavar="KEY=VALUE",
        help="Only the series' experiments with this label (one cluster of a series run on several: cluster=a); repeatable.")] = None,
    first_ok: Annotated[bool, typer.Option(
        "--first-ok", help="The first experiment of a series passes (verdict nothing-to-compare) instead of exit 2: "
                           "a pipeline's first run.")] = False,
    outputs: Annotated[Optional[Path], typer.Option(
        "--outputs", metavar="DIR", help="Write the verdict to DIR/verdict (a pipeline step's result: Tekton, Argo).")] = None,
    store: StoreOpt = None,
) -> None:
    """Compare the newest experiment with its series (or CANDIDATE with BASE) on every trial × metric; exit 1 on a regression.

    Prints a table; the Markdown summary goes to --summary (or $GITHUB_STEP_SUMMARY), or to stdout with -f markdown.
    """
    from ..analyse.family import run_family
    from ..analyse.gating import candidate_of, family_verdict, pair_check, series_check
    from ..errors import NothingToCompare, SpecError
    from ..present.check import check_table, headline, junit as junit_xml, markdown
    from ..present.text import cell
    from ..store.series_records import parse_labels
    from . import make_console

    if len(targets) not in (1, 2):
        raise SpecError(f"check takes NAME or BASE CANDIDATE, got {len(targets)} arguments")
    labels = parse_labels(label or ())
    if labels and len(targets) == 2:
        raise SpecError("--label selects experiments of a series: give NAME, not BASE CANDIDATE")
    db = open_store_of(store)
    try:
        title, base_text, tests = (series_check(db, targets, metric, threshold, window, labels) if len(targets) == 1
                                   else pair_check(db, targets, metric, threshold, window))
    except NothingToCompare as e:
        if not first_ok:
            raise
        make_console(stderr=True).print(cell(f"PASS: nothing to compare with ({e})"), soft_wrap=True)
        _write_verdict(outputs, "nothing-to-compare")
        raise typer.Exit(0) from None
    if not tests:
        raise SpecError(f"nothing to check: no trial of {title} has values of the metrics asked")
    outcomes = run_family(tests, correction.value, alpha)
    units = _units(db.experiment(candidate_of(db, targets)), tests)
    _write_verdict(outputs, family_verdict(outcomes))
    text = markdown(outcomes, title, base_text, correction.value, alpha, units)
    if format is CheckFormat.markdown:
        sys.stdout.write(text)  # escaped for Markdown: nothing a terminal acts on (present.text.markdown_text)
    else:  # a terminal gets a table: Markdown's `###`, `**` and pipes are for CI's summary page
        make_console().print(check_table(outcomes, title, base_text, correction.value, alpha, units))
    if summary is not None and str(summary) not in ("", "."):  # an empty $GITHUB_STEP_SUMMARY is none
        with open(summary, "a", encoding="utf-8") as out:
            out.write(text + "\n")
    if junit is not None:
        junit.write_bytes(junit_xml(outcomes, title))
    make_console(stderr=True).print(headline(outcomes), soft_wrap=True)
    raise typer.Exit(1 if any(o.fails for o in outcomes) else 0)


def _units(record, tests) -> dict[str, str]:
    """Each tested metric's unit: declared by the candidate's spec, else read from its name."""
    from ..present.numbers import metric_unit

    declared = {str(m["name"]): str(m.get("unit") or "") for m in record.declared_metrics()}
    return {t.metric: metric_unit(t.metric, declared.get(t.metric, "")) for t in tests}


def _write_verdict(folder: Optional[Path], verdict: str) -> None:
    if folder is not None:
        from ..pipelines.outputs import write_files

        write_files(folder, {"verdict": verdict})
