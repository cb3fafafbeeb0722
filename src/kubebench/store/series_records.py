"""Values of a series (schema 7) that the analysis takes and both ways of reading a store return;
no SQLAlchemy here, so that ``kubebench history`` on a SQLite store never imports it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import SpecError
from .records import json_objects

_LABEL_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """``["version=1.4.2", "commit=abc123"]`` → a dict; a bad item is a SpecError saying which and why."""
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _LABEL_KEY.match(key) or not value or len(value) > 256:
            raise SpecError(f"invalid --label {item!r}: expected KEY=VALUE, the key a name "
                            "(letters, digits, _ . -) and the value 1 to 256 characters (e.g. version=1.4.2)")
        if key in labels and labels[key] != value:  # which one was meant? (review 2026-12-02 #31)
            raise SpecError(f"--label {key} given twice: {key}={labels[key]} and {key}={value}; give it once")
        labels[key] = value
    return labels


@dataclass(frozen=True)
class SeriesExperiment:
    """One experiment of a series, as its points carry it: id, time, labels and environment."""

    id: str
    created_at: float
    labels: dict[str, str]
    name: str = ""


@dataclass(frozen=True)
class SeriesData:
    """A series' experiments in time order and the succeeded counted runs' metrics of each trial.

    ``runs[trial_key][experiment_id]`` is the list of metric dicts of that trial's runs in that
    experiment; ``params[trial_key]`` the trial's swept parameters (:func:`swept_parameters`; ``trial_key``:
    canonical JSON of them).
    """

    series: str
    experiments: list[SeriesExperiment]
    params: dict[str, dict[str, object]] = field(default_factory=dict)
    runs: dict[str, dict[str, list[dict[str, float]]]] = field(default_factory=dict)
    #: the environment (provenance) most runs of each experiment ran in
    environments: dict[str, dict[str, object]] = field(default_factory=dict)


def trial_key(params: dict[str, object]) -> str:
    """A trial's identity across the experiments of a series: its parameters as canonical JSON."""
    return json.dumps(params, sort_keys=True, default=str, separators=(",", ":"))


def swept_parameters(trials: Iterable[tuple[str, dict[str, object]]]) -> set[str]:
    """Parameters that take more than one value within some experiment: they name a trial.

    A parameter fixed within each experiment (``speed: 0.9`` one night, ``1.0`` the next) describes
    the experiment, not the trial, and may change along a series (as ``kubebench compare`` matches).
    """
    seen: dict[tuple[str, str], str] = {}
    texts: dict[int, dict[str, str]] = {}  # by id of a params dict: the same dict comes once per run
    swept: set[str] = set()
    for exp_id, params in trials:
        as_text = texts.get(id(params))
        if as_text is None:
            as_text = texts[id(params)] = {k: json.dumps(v, sort_keys=True, default=str) for k, v in params.items()}
        for k, text in as_text.items():
            if seen.setdefault((exp_id, k), text) != text:
                swept.add(k)
    return swept


@dataclass(frozen=True)
class AcceptedChange:
    """A step change accepted as intended at ``experiment_id`` (``metric`` "" = every metric)."""

    series: str
    experiment_id: str
    metric: str
    note: str
    created_at: float


@dataclass(frozen=True)
class NoiseFloor:
    """Run-to-run noise of one trial × metric measured by A/A experiments (``kubebench calibrate``).

    ``spread``: the largest relative difference between the median of one A/A experiment and the
    median of the others' runs; ``cv``: the pooled within-experiment coefficient of variation.
    """

    trial_key: str
    metric: str
    spread: float
    cv: float
    experiments: tuple[str, ...]
    runs: int


def build_series(series: str, exp_rows: Sequence[Sequence[Any]], run_rows: Sequence[Sequence[Any]],
                 environments: dict[str, dict[str, object]] | None = None) -> SeriesData:
    """A SeriesData from rows of (id, created_at, labels, name) and of (experiment_id, params,
    metric_values) per run, in trial order, JSON as text or parsed (what both ways of reading select)."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    params_text = [p if isinstance(p, str) else json.dumps(p) for _, p, _ in run_rows]
    metrics = json_objects([values for _, _, values in run_rows])  # one parse for every run: 5× faster than per trial
    for (exp_id, _, _), text, values in zip(run_rows, params_text, metrics):
        grouped.setdefault((exp_id, text), []).append(values)
    return build_grouped(series, exp_rows, [(e, t, v) for (e, t), v in grouped.items()], environments)


def build_grouped(series: str, exp_rows: Sequence[Sequence[Any]], trial_rows: Sequence[tuple[str, str, list[dict[str, Any]]]],
                  environments: dict[str, dict[str, object]] | None = None) -> SeriesData:
    """A SeriesData from experiment rows and rows of (experiment_id, params as JSON text, its runs'
    metric dicts) per experiment × trial, in trial order."""
    labels = json_objects([row[2] for row in exp_rows])
    experiments = [SeriesExperiment(row[0], row[1], dict(lab), row[3]) for row, lab in zip(exp_rows, labels)]
    data = SeriesData(series, experiments, environments=environments or {})
    distinct = list(dict.fromkeys(text for _, text, _ in trial_rows))
    parsed = dict(zip(distinct, json_objects(distinct)))
    swept = swept_parameters((exp_id, parsed[text]) for exp_id, text, _ in trial_rows)
    trials = {text: {k: v for k, v in parsed[text].items() if k in swept} for text in distinct}
    keys = {text: trial_key(params) for text, params in trials.items()}
    for exp_id, text, runs in trial_rows:
        key = keys[text]
        data.params.setdefault(key, trials[text])
        data.runs.setdefault(key, {}).setdefault(exp_id, []).extend(runs)
    return data


def with_labels(data: SeriesData, labels: dict[str, str]) -> SeriesData:
    """The series less the experiments that lack one of ``labels`` (``cluster=a``: one cluster's points of a
    series run on several); the trials only those experiments ran are gone too."""
    if not labels:
        return data
    kept = [e for e in data.experiments if all(e.labels.get(k) == v for k, v in labels.items())]
    ids = {e.id for e in kept}
    runs = {key: {e: r for e, r in by.items() if e in ids} for key, by in data.runs.items()}
    runs = {key: by for key, by in runs.items() if by}
    return SeriesData(data.series, kept, {k: v for k, v in data.params.items() if k in runs}, runs,
                      {e: env for e, env in data.environments.items() if e in ids})
