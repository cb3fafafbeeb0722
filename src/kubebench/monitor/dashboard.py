"""The Grafana dashboard of kubebench's Prometheus metrics, built with the Grafana Foundation SDK.

Panels by experiment (template variable ``experiment``): runs by state, run durations, the latest
metric of each trial and the pushed results, and the telemetry of runs in flight (CPU, memory, GPU).
``kubebench grafana-dashboard`` prints it; import it in Grafana (Dashboards → New → Import).
"""

from __future__ import annotations

import json
from typing import Any

UID = "kubebench"
_EXP = 'experiment=~"$experiment"'


def _datasource() -> Any:
    from grafana_foundation_sdk.models.dashboard import DataSourceRef

    return DataSourceRef(type_val="prometheus", uid="${datasource}")


def _query(expr: str, legend: str, ref: str = "A", instant: bool = False) -> Any:
    from grafana_foundation_sdk.builders import prometheus
    from grafana_foundation_sdk.models.prometheus import PromQueryFormat

    query = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(_datasource())
    return query.instant().format(PromQueryFormat.TABLE) if instant else query.range()


def _timeseries(title: str, unit: str, *queries: Any, width: int = 12) -> Any:
    from grafana_foundation_sdk.builders import timeseries

    panel = timeseries.Panel().title(title).unit(unit).datasource(_datasource()).height(8).span(width)
    for query in queries:
        panel = panel.with_target(query)
    return panel


def _telemetry(title: str, series: str, unit: str) -> Any:
    expr = f'kubebench_telemetry{{{_EXP}, series=~"{series}"}}'
    return _timeseries(title, unit, _query(expr, "{{experiment}} {{run}} {{series}}"), width=8)


def _variables(dashboard: Any) -> Any:
    from grafana_foundation_sdk.builders import dashboard as db
    from grafana_foundation_sdk.models.dashboard import VariableRefresh, VariableSort

    source = db.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
    experiment = (db.QueryVariable("experiment").label("Experiment").datasource(_datasource())
                  .query("label_values(kubebench_runs, experiment)").refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
                  .sort(VariableSort.ALPHABETICAL_DESC).multi(True).include_all(True).all_value(".*"))
    return dashboard.with_variable(source).with_variable(experiment)


def build() -> Any:
    """The dashboard model (``grafana_foundation_sdk.models.dashboard.Dashboard``)."""
    from grafana_foundation_sdk.builders import dashboard as db, stat, table

    board = (db.Dashboard("kubebench").uid(UID).tags(["kubebench"]).refresh("30s").time("now-6h", "now")
             .description("Benchmark runs, results and telemetry recorded by kubebench, by experiment."))
    board = _variables(board)
    board = board.with_row(db.Row("Runs")).with_panel(
        stat.Panel().title("Runs by state").datasource(_datasource()).height(8).span(8)
        .with_target(_query(f"sum by (state) (kubebench_runs{{{_EXP}}})", "{{state}}"))
    ).with_panel(_timeseries(
        "Runs by state over time", "short",
        _query(f"sum by (experiment, state) (kubebench_runs{{{_EXP}}})", "{{experiment}} {{state}}"), width=8,
    )).with_panel(_timeseries(
        "Run duration (median, p95)", "s",
        _query(f"histogram_quantile(0.5, sum by (le, experiment) (kubebench_run_duration_seconds_bucket{{{_EXP}}}))",
               "{{experiment}} median"),
        _query(f"histogram_quantile(0.95, sum by (le, experiment) (kubebench_run_duration_seconds_bucket{{{_EXP}}}))",
               "{{experiment}} p95", ref="B"), width=8,
    ))
    board = board.with_row(db.Row("Results")).with_panel(
        table.Panel().title("Latest metric per trial").datasource(_datasource()).height(10).span(12)
        .with_target(_query(f"kubebench_metric{{{_EXP}}}", "{{trial}} {{metric}}", instant=True))
    ).with_panel(_timeseries(
        "Results over time (latest run per trial; pushed results)", "short",
        _query(f"kubebench_metric{{{_EXP}}}", "{{experiment}} {{trial}} {{metric}}"),
        _query(f"kubebench_run_metric{{{_EXP}}}", "pushed {{experiment}} {{trial}} {{metric}}", ref="B"),
    ))
    board = board.with_row(db.Row("Telemetry of runs in flight")).with_panel(
        _telemetry("CPU of the run's processes", "cpu_percent", "percent")
    ).with_panel(_telemetry("Memory of the run's processes", "memory_bytes", "bytes")).with_panel(
        _telemetry("System CPU", "system_cpu_percent", "percent")
    ).with_panel(_telemetry("GPU utilisation", "gpu[0-9]+_utilization_percent", "percent")).with_panel(
        _telemetry("GPU memory", "gpu[0-9]+_memory_used_bytes", "bytes")
    ).with_panel(_telemetry("GPU power", "gpu[0-9]+_power_watts", "watt"))
    return board.build()


def dashboard_json(indent: int | None = 2) -> str:
    """The dashboard as Grafana's JSON model."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    return json.dumps(build(), cls=JSONEncoder, indent=indent, sort_keys=True)
