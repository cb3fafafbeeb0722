"""Stored runs made up for the analyse tests: trials of one metric, ``ips``, some failed."""

from __future__ import annotations

from kubebench.store.records import RunRecord


def runs(exp: str, trials: dict[str, tuple[dict, list[float]]], failed: dict[str, int] | None = None) -> list[RunRecord]:
    """Succeeded runs of ``exp``, one per value of each trial, and ``failed[trial]`` failed runs of it."""
    found = []
    for trial, (params, values) in trials.items():
        for i, v in enumerate(values):
            found.append(RunRecord(run_id=f"{exp}-{trial}-{i}", experiment_id=exp, trial_id=trial, repeat=i,
                                   warmup=False, status="succeeded", params=params, metrics={"ips": v}))
        for i in range((failed or {}).get(trial, 0)):
            found.append(RunRecord(run_id=f"{exp}-{trial}-f{i}", experiment_id=exp, trial_id=trial, repeat=100 + i,
                                   warmup=False, status="failed", params=params, metrics={}))
    return found


def workload_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """A run's metrics less the phases of its timeline (``queue_seconds`` … ``overhead_fraction``),
    which every run gets: what the workload and its post-processors reported."""
    from kubebench.timeline import PHASE_METRICS

    return {k: v for k, v in metrics.items() if k not in PHASE_METRICS}
