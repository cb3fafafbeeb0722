"""History of a series: per trial, the points (one per experiment) and the change points between them.

Pure: takes a :class:`~kubebench.store.series.SeriesData` already read, the metric and its goal, the
threshold of each trial, and the accepted changes; returns frozen values the CLI, the web page and
the report present alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from ..numerics.stats import Summary, summarize
from ..provenance import provenance_differences
from ..rules import Goal
from ..store.series_records import AcceptedChange, SeriesData, SeriesExperiment
from .changepoint import ChangePoint, Floor, detect

if TYPE_CHECKING:
    from ..store.series_reader import SeriesSource

#: Relative change below which a difference is noise, when the series has no noise floor (calibrate).
DEFAULT_THRESHOLD = 0.02


@dataclass(frozen=True)
class Point:
    """One experiment's runs of one trial: the values and their summary (median, CI …)."""

    experiment: SeriesExperiment
    values: tuple[float, ...]

    @cached_property
    def summary(self) -> Summary:
        """Computed when first asked: a table of 10,000 points shows the summaries of a few hundred."""
        return summarize(self.values)


@dataclass(frozen=True)
class Change:
    """A change point with the experiments on either side, their labels and what differs in their environment."""

    point: ChangePoint
    before: SeriesExperiment
    after: SeriesExperiment
    environment: tuple[str, ...] = ()

    def between(self) -> str:
        """``commit abc123 → def456`` from the labels that differ (else the experiment ids)."""
        a, b = self.before.labels, self.after.labels
        differing = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
        if differing:
            return ", ".join(f"{k} {a.get(k, '—')} → {b.get(k, '—')}" for k in differing)
        return f"{self.before.id} → {self.after.id}"


@dataclass(frozen=True)
class TrialHistory:
    """One trial's series on one metric."""

    params: dict[str, object]
    metric: str
    goal: Goal
    threshold: float
    points: tuple[Point, ...]
    changes: tuple[Change, ...] = field(default=())
    #: the unit the spec declares for the metric ("" when it declares none)
    unit: str = ""


def trial_matches(params: dict[str, object], wanted: dict[str, str]) -> bool:
    """Whether a trial's parameters have every ``key=value`` asked (values compared as text)."""
    return all(key in params and _text(params[key]) == value for key, value in wanted.items())


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def history(data: SeriesData, metric: str, goal: Goal, *, thresholds: dict[str, float] | None = None,
            accepted: Sequence[AcceptedChange] = (), trials: dict[str, str] | None = None,
            alpha: float = 0.05, floors: dict[str, Floor] | None = None) -> list[TrialHistory]:
    """Every trial of the series (those matching ``trials``) on ``metric``, with its change points.

    ``thresholds`` by trial key (from noise floors); others get :data:`DEFAULT_THRESHOLD`. ``floors`` by
    trial key: the A/A noise floors the detection pools with the wobble it sees in the series.
    """
    accepted_at = {a.experiment_id: a.note for a in accepted if a.metric in ("", metric)}
    found = []
    for key, params in data.params.items():
        if trials and not trial_matches(params, trials):
            continue
        by_experiment = data.runs.get(key, {})
        points = [Point(e, tuple(vals)) for e in data.experiments
                  if (vals := [m[metric] for m in by_experiment.get(e.id, []) if metric in m])]
        if not points:
            continue
        threshold = (thresholds or {}).get(key, DEFAULT_THRESHOLD)
        index = {p.experiment.id: i for i, p in enumerate(points)}
        cuts = {index[e]: note for e, note in accepted_at.items() if e in index}
        changes = detect([p.values for p in points], goal=goal, threshold=threshold, alpha=alpha,
                         accepted=set(cuts), notes=cuts, floor=(floors or {}).get(key))
        found.append(TrialHistory(params, metric, goal, threshold, tuple(points),
                                  tuple(_change(c, points, data) for c in changes)))
    return found


def _change(point: ChangePoint, points: Sequence[Point], data: SeriesData) -> Change:
    before, after = points[point.index - 1].experiment, points[point.index].experiment
    envs = data.environments
    differences = provenance_differences(envs[before.id], envs[after.id]) if before.id in envs and after.id in envs else []
    return Change(point, before, after, tuple(differences))


def attach_environments(histories: Sequence[TrialHistory], envs: dict[str, dict[str, object]]) -> list[TrialHistory]:
    """The histories with what differs in the environment around each change (``envs``: id → provenance)."""
    def with_env(c: Change) -> Change:
        if c.before.id not in envs or c.after.id not in envs:
            return c
        return replace(c, environment=tuple(provenance_differences(envs[c.before.id], envs[c.after.id])))

    return [replace(h, changes=tuple(with_env(c) for c in h.changes)) for h in histories]


def change_experiments(histories: Sequence[TrialHistory]) -> list[str]:
    """Ids of the experiments on either side of every change (whose environments are compared)."""
    return list(dict.fromkeys(e.id for h in histories for c in h.changes for e in (c.before, c.after)))


def parse_trials(items: list[str] | None) -> dict[str, str]:
    """``["bs=32"]`` → ``{"bs": "32"}``; a bad item is a clear error."""
    from ..errors import SpecError

    wanted = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"invalid --trial {item!r}: expected KEY=VALUE (e.g. batch_size=32)")
        wanted[key.strip()] = value.strip()
    return wanted


def load_history(source: SeriesSource, name: str, metric: str | None, trials: dict[str, str], since: float | None,
                 labels: dict[str, str] | None = None) -> tuple[str, str, list[TrialHistory]]:
    """(series, metric, histories) of a series from a :class:`~kubebench.store.series_reader.SeriesSource`:
    what the CLI, the web page and the report show; ``labels``: only the experiments with these
    (``cluster=a``: one cluster's points of a series run on several)."""
    from ..errors import NotFoundError
    from ..store.series_records import with_labels

    series = source.resolve_series(name)
    newest = source.experiment(source.newest_experiment(series))
    metric_name, goal = newest.metric_goal(metric)
    data = with_labels(source.read_series(series, since=since, metrics=[metric_name]), labels or {})
    if not data.experiments:
        shown = " with " + ", ".join(f"{k}={v}" for k, v in labels.items()) if labels else ""
        raise NotFoundError(f"series {series!r} has no experiments{shown} since then" if since else
                            f"series {series!r} has no experiments{shown}")
    floors = {key: f for (key, m), f in source.noise_floors(series).items() if m == metric_name}
    found = history(data, metric_name, goal, thresholds={key: f.spread for key, f in floors.items()},
                    accepted=source.accepted_changes(series), trials=trials,
                    floors={key: Floor(f.spread, len(f.experiments), f.runs) for key, f in floors.items()})
    if not found:
        raise NotFoundError(f"series {series!r} has no values of {metric_name!r}"
                            + (" for trials " + ", ".join(f"{k}={v}" for k, v in trials.items()) if trials else ""))
    unit = next((str(m.get("unit") or "") for m in newest.declared_metrics() if m["name"] == metric_name), "")
    found = [replace(h, unit=unit) for h in found] if unit else found
    return series, metric_name, attach_environments(found, source.environments(change_experiments(found)))
