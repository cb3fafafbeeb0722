"""Prometheus exposition of the store and of runs in flight (``/metrics``; names prefixed ``kubebench_``).

The collector reads the store at scrape time, so every process serving ``/metrics`` (``kubebench
serve``, ``kubebench run --metrics-port``) shows the same numbers:

- ``kubebench_runs{experiment, name, state}``: runs by state (warm-up runs left out);
- ``kubebench_run_duration_seconds{experiment}``: histogram of finished runs' wall times;
- ``kubebench_metric{experiment, trial, metric}``: the latest succeeded run's value per trial;
- ``kubebench_metric_series_dropped{experiment}``: the ``kubebench_metric`` series left out (bounds below);
- ``kubebench_telemetry{experiment, run, series}``: the latest telemetry sample of each run in flight.

``/metrics`` answers without a token, and Prometheus keeps every label value it sees as a series of its
own, so what a spec or a workload writes never becomes a label unbounded: a trial is its id (its
parameters are spec text, and stay in the API), a label value is cut to :data:`LABEL_CHARS` characters
(with a digest, so two long values stay apart), and ``kubebench_metric`` has at most
:data:`SERIES_PER_EXPERIMENT` series per experiment (declared metrics first) and :data:`SERIES` in all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .live import LIVE, LiveTelemetry

if TYPE_CHECKING:
    from ..store.records import ExperimentRecord, RunRecord
    from ..store.store import Store

#: Upper bounds of the run-duration histogram, in seconds.
DURATION_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)
#: Characters of a label value; a longer one is cut and ends with a digest of the whole.
LABEL_CHARS = 200
#: ``kubebench_metric`` series of one experiment (trials × metrics), and of one scrape.
SERIES_PER_EXPERIMENT = 1_000
SERIES = 10_000


class StoreCollector:
    """A prometheus_client collector over the newest ``limit`` experiments of a store, plus live telemetry."""

    def __init__(self, store: Store, limit: int = 100, live: LiveTelemetry = LIVE) -> None:
        self.store, self.limit, self.live = store, limit, live

    def describe(self) -> list:
        return []  # no collect() at registration: the store is read at scrape time only

    def collect(self) -> Iterator[Any]:
        """The metric families of one scrape."""
        from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

        runs = GaugeMetricFamily("kubebench_runs", "Runs by state, per experiment (warm-up runs left out).",
                                 labels=["experiment", "name", "state"])
        durations = HistogramMetricFamily("kubebench_run_duration_seconds", "Wall time of finished runs.",
                                          labels=["experiment"])
        latest = GaugeMetricFamily("kubebench_metric", "The latest succeeded run's value of each metric, per trial.",
                                   labels=["experiment", "trial", "metric"])
        dropped = GaugeMetricFamily("kubebench_metric_series_dropped",
                                    f"kubebench_metric series left out: over {SERIES_PER_EXPERIMENT} in an experiment "
                                    f"or {SERIES} in all (the API has every value).", labels=["experiment"])
        room = SERIES
        for record in self.store.experiments(self.limit):
            for state, count in sorted(record.runs_by_status.items()):
                runs.add_metric(_labels(record.id, record.name, state), count)
            found = self.store.runs(record.id, logs=False)
            _add_durations(record, found, durations)
            values = _latest_values(record, found)
            kept = values[:min(room, SERIES_PER_EXPERIMENT)]
            for trial, name, value in kept:
                latest.add_metric(_labels(record.id, trial, name), value)
            room -= len(kept)
            if len(values) > len(kept):
                dropped.add_metric(_labels(record.id), len(values) - len(kept))
        live = GaugeMetricFamily("kubebench_telemetry", "The latest telemetry sample of each run in flight.",
                                 labels=["experiment", "run", "series"])
        for experiment, run, series, value in self.live.snapshot():
            live.add_metric(_labels(experiment, run, series), value)
        yield from (runs, durations, latest, dropped, live)


def _add_durations(record: ExperimentRecord, found: list[RunRecord], durations: Any) -> None:
    times = [r.duration_s for r in found if r.duration_s is not None and r.status != "running"]
    if times:
        buckets = [(str(b), sum(1 for t in times if t <= b)) for b in DURATION_BUCKETS]
        durations.add_metric(_labels(record.id), buckets + [("+Inf", len(times))], sum(times))


def _latest_values(record: ExperimentRecord, found: list[RunRecord]) -> list[tuple[str, str, float]]:
    """(trial, metric, value) of each trial's latest succeeded run, trials in plan order, each trial's
    declared metrics first (in the spec's order), then the others by name."""
    newest: dict[str, RunRecord] = {}
    for run in found:
        if run.status == "succeeded" and (run.trial_id not in newest
                                          or (run.finished_at or 0) >= (newest[run.trial_id].finished_at or 0)):
            newest[run.trial_id] = run
    declared = {str(m["name"]): i for i, m in enumerate(record.declared_metrics())}
    return [(trial, name, run.metrics[name]) for trial, run in newest.items()
            for name in sorted(run.metrics, key=lambda n: (declared.get(n, len(declared)), n))]


def _labels(*values: object) -> list[str]:
    """Label values, each at most :data:`LABEL_CHARS` characters."""
    return [_bounded(str(v)) for v in values]


def _bounded(value: str) -> str:
    if len(value) <= LABEL_CHARS:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{value[:LABEL_CHARS - 18]}…{digest}"


def make_registry(store: Store) -> Any:
    """A CollectorRegistry with the store's collector (and nothing of this process's own)."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    registry.register(StoreCollector(store))
    return registry


def serve_metrics(store: Store, port: int, host: str = "127.0.0.1") -> Any:
    """Serve ``/metrics`` of ``store`` on ``host:port`` in a background thread; returns the server
    (``shutdown()`` then ``server_close()`` to stop it).
    """
    from prometheus_client import start_http_server

    from ..errors import SpecError

    try:
        server, _thread = start_http_server(port, addr=host, registry=make_registry(store))
    except OSError as e:
        raise SpecError(f"cannot serve /metrics on {host}:{port}: {e.strerror or e}") from e
    return server
