"""What ``kubebench check`` tests: the newest experiment of a series against its accepted level, or one
experiment against another, on every trial × metric. Pure: builds :class:`.family.Check` values.

The baseline of a trial of a series is the series' *accepted level*: its last ``window`` experiments
before the candidate that come after the newest accepted change (``kubebench history accept``) and
before any change point ``history`` finds there that is not accepted. Never a window that straddles a
change: a regression found at one experiment keeps failing the gate, night after night, until it is
accepted (then the gate measures against the new level) or fixed (the candidate is back at the old
level). Each trial's base values are the runs of those experiments pooled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import NothingToCompare, SpecError
from ..rules import Goal
from ..store.records import RunRecord
from ..store.series_records import AcceptedChange, SeriesData, swept_parameters, trial_key
from .experiments import matched_trials
from .family import Check

#: Experiments of the series a candidate is checked against, by default.
WINDOW = 10


def baseline(data: SeriesData, candidate: str, metric: str, accepted: Sequence[AcceptedChange] = (),
             window: int = WINDOW, changes: Sequence[str] = ()) -> list[str]:
    """Ids of the experiments the candidate is measured against on ``metric`` (oldest first): the last
    ``window`` before it, after the newest accepted change and before the first of ``changes`` (the
    experiments where a change point not accepted starts) after that."""
    ids = [e.id for e in data.experiments]
    if candidate not in ids:
        raise SpecError(f"experiment {candidate!r} is not in series {data.series!r}")
    before = ids[:ids.index(candidate)]
    if any(a.experiment_id == candidate and a.metric in ("", metric) for a in accepted):
        return []  # the candidate starts an accepted level: nothing at that level before it
    cuts = [before.index(a.experiment_id) for a in accepted
            if a.metric in ("", metric) and a.experiment_id in before]
    start = max(cuts, default=0)
    end = min((i for i in (before.index(e) for e in changes if e in before) if i > start), default=len(before))
    return before[max(start, end - window):end]


@dataclass(frozen=True)
class SeriesTests:
    """The gate's tests of a series' candidate, what each metric is measured against (the union over its
    trials), and the unaccepted changes that hold a metric's baseline at the level before them."""

    tests: list[Check]
    baselines: dict[str, list[str]]
    held: dict[str, list[str]] = field(default_factory=dict)


def series_tests(data: SeriesData, candidate: str, metrics: Sequence[tuple[str, Goal]],
                 thresholds: dict[tuple[str, str], float], default_threshold: float,
                 accepted: Sequence[AcceptedChange] = (), window: int = WINDOW) -> SeriesTests:
    """The tests of every trial × metric of the candidate against each trial's accepted level (module docstring)."""
    tests, baselines, held = [], {}, {}
    for metric, goal in metrics:
        changes = unaccepted_changes(data, candidate, metric, goal, thresholds, default_threshold, accepted)
        used: dict[str, None] = {}
        for key, params in data.params.items():
            base_ids = baseline(data, candidate, metric, accepted, window, changes.get(key, ()))
            used.update(dict.fromkeys(base_ids))
            runs = data.runs.get(key, {})
            cand = tuple(m[metric] for m in runs.get(candidate, []) if metric in m)
            base = tuple(m[metric] for e in base_ids for m in runs.get(e, []) if metric in m)
            if cand or base:
                tests.append(Check(params, metric, goal, base, cand, thresholds.get((key, metric), default_threshold)))
        order = {e.id: i for i, e in enumerate(data.experiments)}
        baselines[metric] = sorted(used, key=order.__getitem__)
        held[metric] = sorted({e for found in changes.values() for e in found if e in order and e != candidate},
                              key=order.__getitem__)
    if not any(baselines.values()):
        raise NothingToCompare(f"experiment {candidate!r} is the first of series {data.series!r} (since its last accepted "
                        "change): nothing to check it against; run the benchmark again, or give BASE CANDIDATE")
    return SeriesTests(tests, baselines, {m: ids for m, ids in held.items() if ids})


def unaccepted_changes(data: SeriesData, candidate: str, metric: str, goal: Goal,
                       thresholds: dict[tuple[str, str], float], default_threshold: float,
                       accepted: Sequence[AcceptedChange] = ()) -> dict[str, list[str]]:
    """By trial key, the experiments (up to the candidate) where ``kubebench history`` finds a change point of
    ``metric`` that is not accepted."""
    from dataclasses import replace

    from .history import history

    ids = [e.id for e in data.experiments]
    if candidate not in ids:
        return {}
    upto = replace(data, experiments=data.experiments[:ids.index(candidate) + 1])
    trial_thresholds = {key: t for (key, m), t in thresholds.items() if m == metric}
    found: dict[str, list[str]] = {}
    for trial in history(upto, metric, goal, thresholds=trial_thresholds | {
            key: default_threshold for key in upto.params if key not in trial_thresholds}, accepted=accepted):
        starts = [c.after.id for c in trial.changes if not c.point.accepted]
        if starts:
            found[trial_key(trial.params)] = starts
    return found


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
