"""What ``kubebench check`` tests: the newest experiment of a series against its recent level, or one
experiment against another, on every trial × metric. Pure: builds :class:`.family.Check` values.

The baseline of a series is its last ``window`` experiments before the candidate, none of them before
the newest accepted change (``kubebench history accept``): once a step is accepted, the gate measures
against the new level. Each trial's base values are the runs of those experiments pooled.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import NothingToCompare, SpecError
from ..store.records import RunRecord
from ..store.series_records import AcceptedChange, SeriesData, swept_parameters, trial_key
from .compare import Goal
from .experiments import matched_trials
from .family import Check

#: Experiments of the series a candidate is checked against, by default.
WINDOW = 10


def baseline(data: SeriesData, candidate: str, metric: str, accepted: Sequence[AcceptedChange] = (),
             window: int = WINDOW) -> list[str]:
    """Ids of the experiments the candidate is measured against on ``metric`` (oldest first)."""
    ids = [e.id for e in data.experiments]
    if candidate not in ids:
        raise SpecError(f"experiment {candidate!r} is not in series {data.series!r}")
    before = ids[:ids.index(candidate)]
    cuts = [before.index(a.experiment_id) for a in accepted
            if a.metric in ("", metric) and a.experiment_id in before]
    start = max(cuts, default=0)
    return before[max(start, len(before) - window):]


def series_tests(data: SeriesData, candidate: str, metrics: Sequence[tuple[str, Goal]],
                 thresholds: dict[tuple[str, str], float], default_threshold: float,
                 accepted: Sequence[AcceptedChange] = (), window: int = WINDOW) -> tuple[dict[str, list[str]], list[Check]]:
    """The tests of every trial × metric of the candidate, and the baseline experiments of each metric."""
    tests, baselines = [], {}
    for metric, goal in metrics:
        base_ids = baselines[metric] = baseline(data, candidate, metric, accepted, window)
        for key, params in data.params.items():
            runs = data.runs.get(key, {})
            cand = tuple(m[metric] for m in runs.get(candidate, []) if metric in m)
            base = tuple(m[metric] for e in base_ids for m in runs.get(e, []) if metric in m)
            if cand or base:
                tests.append(Check(params, metric, goal, base, cand, thresholds.get((key, metric), default_threshold)))
    if not any(baselines.values()):
        raise NothingToCompare(f"experiment {candidate!r} is the first of series {data.series!r} (since its last accepted "
                        "change): nothing to check it against; run the benchmark again, or give BASE CANDIDATE")
    return baselines, tests


def pair_tests(base: Sequence[RunRecord], candidate: Sequence[RunRecord], metrics: Sequence[tuple[str, Goal]],
               thresholds: dict[tuple[str, str], float], default_threshold: float) -> list[Check]:
    """The tests of every matched trial × metric of two experiments."""
    tests = []
    swept = swept_parameters((r.experiment_id, r.params) for r in (*base, *candidate))
    for metric, goal in metrics:
        for b, c in matched_trials(base, candidate, metric):
            # a trial the candidate lacks is checked with no candidate values, as series_tests does
            params, values = (c.params, c.values) if c is not None else (b.params, ())
            if b.values or values:
                key = trial_key({k: v for k, v in params.items() if k in swept})  # as read_series keys trials
                threshold = thresholds.get((key, metric), default_threshold)
                tests.append(Check(params, metric, goal, b.values, values, threshold))
    return tests
