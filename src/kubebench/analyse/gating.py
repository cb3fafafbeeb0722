"""The tests ``kubebench check`` runs, read from the store: the newest experiment of a series (or a
given one) against the experiments before it, or CANDIDATE against BASE; shared by the CLI and the
Benchmark runner's gate (``spec.gate`` of a Benchmark resource)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from ..rules import Goal
from .family import Check
from .gate import WINDOW

if TYPE_CHECKING:
    from ..store.records import ExperimentRecord
    from ..store.series_records import SeriesData
    from ..store.store import Store
    from .family import Outcome


def _metrics(record: ExperimentRecord, asked: Optional[list[str]]) -> list[tuple[str, Goal]]:
    from ..errors import SpecError

    declared = [m["name"] for m in record.declared_metrics()]
    names = asked or declared
    if not names:
        raise SpecError(f"experiment {record.id!r} declares no metrics: choose them with --metric")
    return [record.metric_goal(name) for name in names]


def _thresholds(db: Store, series: str, given: Optional[float]) -> tuple[dict[tuple[str, str], float], float, str]:
    """(thresholds by (trial key, metric), the default of the others, which they are in words)."""
    from ..store.series import noise_floors
    from .history import DEFAULT_THRESHOLD

    if given is not None:
        return {}, given, f"thresholds: ±{given:.1%} (--threshold) for every test"
    floors = noise_floors(db, series)
    if not floors:
        return {}, DEFAULT_THRESHOLD, f"thresholds: ±{DEFAULT_THRESHOLD:.0%} (the default: the series has no noise floor)"
    origins = sorted({", ".join(f.experiments) for f in floors.values()})
    return ({key: f.spread for key, f in floors.items()}, DEFAULT_THRESHOLD,
            f"thresholds: the noise floor from A/A experiments {'; '.join(origins)} (kubebench calibrate) where it "
            f"has one, else ±{DEFAULT_THRESHOLD:.0%}")


def candidate_of(db: Store, targets: list[str]) -> str:
    """The experiment ``check`` tests: CANDIDATE of ``[BASE, CANDIDATE]``; of ``[NAME]``, the experiment
    NAME names, else the newest of the series NAME."""
    from ..errors import NotFoundError
    from ..store.series import recent_experiments, resolve_series

    if len(targets) == 2:
        return targets[1]
    name = targets[0]
    series = resolve_series(db, name)
    try:
        if (db.experiment(name).series or "") == series:
            return name
    except NotFoundError:
        pass
    return recent_experiments(db, series, float("inf"), 1)[-1]


def _candidate(name: str, data: SeriesData) -> str:
    return name if name in {e.id for e in data.experiments} else data.experiments[-1].id


def series_check(db: Store, targets: list[str], metric: Optional[list[str]] = None, threshold: Optional[float] = None,
                 window: int = WINDOW, labels: Optional[dict[str, str]] = None) -> tuple[str, str, list[Check]]:
    """(title, what the candidate is checked against, the tests) for ``[NAME]``: a series or an experiment
    (plain text: each presenter escapes it for its format);
    ``labels``: only the experiments of the series with these labels (one cluster of several)."""
    from ..errors import SpecError
    from ..store.series import accepted_changes, read_series, resolve_series
    from ..store.series_records import with_labels
    from .gate import series_tests

    name = targets[0]
    series = resolve_series(db, name)
    data = with_labels(read_series(db, series), labels or {})
    if not data.experiments:
        shown = ", ".join(f"{k}={v}" for k, v in (labels or {}).items())
        raise SpecError(f"no experiment of series {series!r} has the labels {shown}")
    candidate = _candidate(name, data)
    record = db.experiment(candidate)
    thresholds, default, floor_text = _thresholds(db, series, threshold)
    found = series_tests(data, candidate, _metrics(record, metric), thresholds, default,
                         accepted_changes(db, series), window)
    used = sorted({e for ids in found.baselines.values() for e in ids})
    within = "".join(f" with {k}={v}" for k, v in (labels or {}).items())
    held = sorted({e for ids in found.held.values() for e in ids})
    level = (f"; a trial with a change not accepted is measured against its level before it (at "
             f"{', '.join(held)}: kubebench history accept {series} --at {held[0]} makes the "
             "change the new level)") if held else ""
    base_text = f"{len(used)} earlier experiment{'s' * (len(used) != 1)} of series {series}{within}{level}; {floor_text}"
    return f"{series} · {candidate}", base_text, found.tests


def pair_check(db: Store, targets: list[str], metric: Optional[list[str]] = None, threshold: Optional[float] = None,
               window: int = WINDOW) -> tuple[str, str, list[Check]]:
    """(title, what the candidate is checked against, the tests) for ``[BASE, CANDIDATE]``."""
    from .gate import pair_tests

    base, candidate = targets
    db.experiment(base)
    record = db.experiment(candidate)
    thresholds, default, floor_text = _thresholds(db, record.series or record.name, threshold)
    tests = pair_tests(db.runs(base), db.runs(candidate), _metrics(record, metric), thresholds, default)
    return f"{candidate} vs {base}", f"{base}; {floor_text}", tests


def family_verdict(outcomes: Sequence[Outcome]) -> str:
    """One word for a family of outcomes, as a Benchmark's ``status.gate`` and a pipeline's gate step
    report it: ``regressed`` (the gate fails), ``improved``, ``unchanged`` or ``inconclusive``."""
    verdicts = [o.verdict for o in outcomes]
    if any(o.fails for o in outcomes):
        return "regressed"
    if "improved" in verdicts and "regressed" not in verdicts:
        return "improved"
    if all(v == "unchanged" for v in verdicts):
        return "unchanged"
    return "inconclusive"
