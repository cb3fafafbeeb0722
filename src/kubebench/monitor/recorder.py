"""Telemetry of one run, for the runner: started after submit, stopped when the job ends, then stored
(a Kubernetes run's pods over the window its workload ran, see ``RunTelemetry.record``).

The backend says where it comes from (``Backend.telemetry``): replicas that are processes of this
machine are sampled by a :class:`~.sampler.Sampler`; pods are read from Prometheus over the run's
window when ``telemetry.prometheus_url`` is given. Telemetry never fails a run: a problem is a
warning in its info.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..backends.base import PodTelemetry, ProcessTelemetry, TelemetrySource
from ..efficiency.counters import Energy, Meter, local_meter
from ..errors import KubebenchError
from ..spec.telemetry import TelemetryConfig
from .energy import pods_energy
from .live import LIVE
from .sampler import Sample, Sampler

if TYPE_CHECKING:
    from ..store.records import RunResult
    from ..store.store import Store

WARNING_KEY = "telemetry_warning"


class RunTelemetry:
    """One run's telemetry: ``start(handle)`` → ``stop()`` → ``record(store, result)``."""

    def __init__(self, config: TelemetryConfig, experiment_id: str, run_id: str) -> None:
        self.config = config
        self.experiment_id = experiment_id
        self.run_id = run_id
        self.started = self.ended = 0.0
        self._source: TelemetrySource | None = None
        self._sampler: Sampler | None = None
        self._samples: list[Sample] = []
        self._warning = ""
        self._meter: Meter | None = None
        self._energy: Energy | None = None
        self._window: tuple[float, float] | None = None  # what the pods are read over (see record)

    def start(self, source: TelemetrySource | None) -> None:
        """Begin the run's window; sample the job's processes from now on when it has any here."""
        self.started, self._source = time.time(), source
        if not self.config.enabled or not isinstance(source, ProcessTelemetry):
            return
        self._meter = local_meter().start()  # this machine's energy counters (see .energy)
        try:
            self._sampler = Sampler(list(source.pids), self.config.interval, self.config.gpu, self._live).start()
        except Exception as e:  # psutil refusing /proc, a thread that cannot start: the run goes on
            self._warning = f"telemetry sampler did not start: {e}"

    def _live(self, values: dict[str, float]) -> None:
        LIVE.update(self.experiment_id, self.run_id, values)

    def stop(self) -> None:
        """End the run's window and the sampling (safe to call twice)."""
        if not self.ended:
            self.ended = time.time()
        meter, self._meter = self._meter, None
        if meter is not None:
            self._energy = meter.stop()
        sampler, self._sampler = self._sampler, None
        if sampler is not None:
            self._samples = sampler.stop()
            self._warning = self._warning or sampler.error
            LIVE.clear(self.run_id)

    def record(self, store: Store, result: RunResult, window: tuple[float, float] | None = None) -> RunResult:
        """Store the run's series and return ``result`` with their summaries among its metrics.

        ``window``: when the workload ran (its timeline's, see :mod:`kubebench.timeline`): the pods'
        series and energy are read over it, not over the queue and start-up before (without one: from
        submit to the end of the job). Summaries go to succeeded runs only, and never replace a metric
        the workload reported.
        """
        from .summary import summarize

        self.stop()
        if window is not None and not isinstance(self._source, ProcessTelemetry):
            self._window = window
        samples = self._samples or self._from_prometheus()
        if samples:
            store.add_telemetry(self.run_id, samples)
        energy = self._energy or pods_energy(self.config, self._source, *self._read_over())
        update: dict[str, Any] = {}
        if (samples or energy.metrics) and result.status == "succeeded":
            update["metrics"] = {**(summarize(samples) if samples else {}), **energy.metrics, **result.metrics}
        info = {**energy.info, **({WARNING_KEY: self._warning} if self._warning else {})}
        if info:
            update["info"] = {**result.info, **info}
        return result.model_copy(update=update) if update else result

    def _read_over(self) -> tuple[float, float]:
        return self._window or (self.started, self.ended)

    @property
    def energy_seconds(self) -> float:
        """Seconds the run's energy was measured over (see ``record``)."""
        start, end = self._read_over()
        return end - start

    @property
    def machine_local(self) -> bool:
        """Whether the run's processes ran on this machine (its resources are this machine's)."""
        return isinstance(self._source, ProcessTelemetry)

    def _from_prometheus(self) -> list[Sample]:
        source = self._source
        if not (self.config.enabled and self.config.prometheus_url and isinstance(source, PodTelemetry) and self.started):
            return []
        from .promql import Window, pod_telemetry

        try:
            return pod_telemetry(Window(source.namespace, source.pods, *self._read_over()), self.config)
        except KubebenchError as e:
            self._warning = str(e)
            return []
