"""Prometheus exposition of the store and of runs in flight (``/metrics``; names prefixed ``kubebench_``).

The collector reads the store at scrape time, so every process serving ``/metrics`` (``kubebench
serve``, ``kubebench run --metrics-port``) shows the same numbers:

- ``kubebench_runs{experiment, name, state}``: runs by state (warm-up runs left out);
- ``kubebench_run_duration_seconds{experiment}``: histogram of finished runs' wall times;
- ``kubebench_metric{experiment, trial, params, metric}``: the latest succeeded run's value per trial;
- ``kubebench_telemetry{experiment, run, series}``: the latest telemetry sample of each run in flight.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .live import LIVE, LiveTelemetry

if TYPE_CHECKING:
    from ..store.records import ExperimentRecord, RunRecord
    from ..store.store import Store

#: Upper bounds of the run-duration histogram, in seconds.
DURATION_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)


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
                                   labels=["experiment", "trial", "params", "metric"])
        for record in self.store.experiments(self.limit):
            for state, count in sorted(record.runs_by_status.items()):
                runs.add_metric([record.id, record.name, state], count)
            self._add_runs(record, self.store.runs(record.id), durations, latest)
        live = GaugeMetricFamily("kubebench_telemetry", "The latest telemetry sample of each run in flight.",
                                 labels=["experiment", "run", "series"])
        for experiment, run, series, value in self.live.snapshot():
            live.add_metric([experiment, run, series], value)
        yield from (runs, durations, latest, live)

    @staticmethod
    def _add_runs(record: ExperimentRecord, found: list[RunRecord], durations: Any, latest: Any) -> None:
        times = [r.duration_s for r in found if r.duration_s is not None and r.status != "running"]
        if times:
            buckets = [(str(b), sum(1 for t in times if t <= b)) for b in DURATION_BUCKETS]
            durations.add_metric([record.id], buckets + [("+Inf", len(times))], sum(times))
        newest: dict[str, RunRecord] = {}
        for run in found:
            if run.status == "succeeded" and (run.trial_id not in newest
                                              or (run.finished_at or 0) >= (newest[run.trial_id].finished_at or 0)):
                newest[run.trial_id] = run
        for trial, run in newest.items():
            for name, value in sorted(run.metrics.items()):
                latest.add_metric([record.id, trial, _label(run.params), name], value)


def _label(params: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "all"


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
