"""``report: [{kind: pushgateway, url: http://pushgateway:9091}]``: push each finished run's metrics.

One group per trial (``job``, ``experiment``, ``trial``): a push replaces the trial's previous run, so
the Pushgateway holds the latest result of every trial, however many runs there were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..spec.base import PluginConfig
from .reporters import Reporter

if TYPE_CHECKING:
    from ..collect.context import RunContext
    from ..store.records import RunResult


class PushgatewayConfig(PluginConfig):
    """Options of the Pushgateway reporter."""

    kind: Literal["pushgateway"] = "pushgateway"
    url: str = Field(pattern=r"^https?://")
    #: The ``job`` label of the pushed group.
    job: str = "kubebench"
    timeout: float = Field(10.0, gt=0)


class PushgatewayReporter(Reporter):
    """Pushes ``kubebench_run_metric{metric=…}``, ``kubebench_run_succeeded`` and
    ``kubebench_run_finished_timestamp_seconds`` of each run, labelled with its run id and repeat.
    """

    Config = PushgatewayConfig

    def report(self, ctx: RunContext, result: RunResult) -> None:
        """Push the run's group (replacing the trial's previous one)."""
        from prometheus_client import push_to_gateway

        config = self.config
        assert isinstance(config, PushgatewayConfig)
        push_to_gateway(config.url, job=config.job, registry=run_registry(ctx, result), timeout=config.timeout,
                        grouping_key={"experiment": ctx.experiment_id, "trial": ctx.trial_id})


def run_registry(ctx: RunContext, result: RunResult):
    """A registry holding one run's values (what is pushed)."""
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    labels = {"run": ctx.run_id, "repeat": str(ctx.repeat)}
    metric = Gauge("kubebench_run_metric", "A metric of the trial's latest run.", [*labels, "metric"],
                   registry=registry)
    for name, value in result.metrics.items():
        metric.labels(**labels, metric=name).set(value)
    Gauge("kubebench_run_succeeded", "1 if the trial's latest run succeeded, else 0.", list(labels),
          registry=registry).labels(**labels).set(1 if result.status == "succeeded" else 0)
    Gauge("kubebench_run_finished_timestamp_seconds", "When the trial's latest run ended (unix time).",
          list(labels), registry=registry).labels(**labels).set(result.finished_at)
    return registry
