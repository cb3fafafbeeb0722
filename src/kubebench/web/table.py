"""Rows of the runs table: one per experiment × trial, with what a person filters and sorts on."""

from __future__ import annotations

import statistics

from ..provenance import flatten

#: Environment fields shown (of the flattened provenance), when the runs recorded them.
ENV_PREFIXES = ("host", "node", "gpu", "cuda", "driver", "image", "python", "packages.torch", "packages.kubebench",
                "backend", "git")


def table_rows(store, limit: int, name: str | None = None) -> tuple[list[dict], dict[str, str], dict[str, str]]:
    """(rows, goal of each metric, unit of each metric) of the newest ``limit`` experiments (of
    benchmark ``name`` when given); a metric's unit is the newest declaration's, else read from its name."""
    from ..present.numbers import metric_unit
    from ..store.series import environments_of, notes, trial_runs

    records = store.experiment_page(name=name, limit=limit).items if name else store.experiments(limit)
    ids = [r.id for r in records]
    runs, envs, annotated = trial_runs(store, ids), environments_of(store, ids), notes(store, ids)
    goals: dict[str, str] = {}
    declared: dict[str, str] = {}
    rows = []
    for record in records:
        for metric in record.declared_metrics():
            goals.setdefault(str(metric["name"]), str(metric.get("goal", "maximize")))
            declared.setdefault(str(metric["name"]), str(metric.get("unit") or ""))
        env = {k: _short(v) for k, v in flatten(envs.get(record.id) or {}).items() if k.startswith(ENV_PREFIXES)}
        extra = annotated.get(record.id, {"note": "", "tags": []})
        experiment = {"id": record.id, "name": record.name, "series": record.series, "state": record.state,
                      "backend": record.backend, "created_at": record.created_at}
        for index, (params, values) in enumerate(runs.get(record.id, [])):
            metrics = {}
            for name in {k for m in values for k in m}:
                got = [m[name] for m in values if name in m]
                metrics[name] = statistics.median(got)
            rows.append({"experiment": experiment, "trial": index, "params": params, "metrics": metrics,
                         "runs": len(values), "labels": record.labels, "tags": extra["tags"], "note": extra["note"],
                         "env": env})
    units = {m: metric_unit(m, declared.get(m, "")) for m in {k for r in rows for k in r["metrics"]}}
    return rows, goals, units


def _short(value: object) -> object:
    text = value if isinstance(value, (int, float, bool)) or value is None else str(value)
    return text[:120] if isinstance(text, str) else text
