"""What a pipeline step reports after ``kubebench run`` or ``kubebench check``: small typed values
(the full results stay in the store and the dashboard, found by the experiment id).

- the run step: the experiment id, the run counts, and the best trial's median (with the mean's
  95% CI) of every declared metric, the primary first; the best trial is the one the Benchmark
  resource's ``status.primary`` shows (by the primary metric's median and goal);
- the gate step: the verdict (``regressed``, ``improved``, ``unchanged``, ``inconclusive``, ``nothing-to-compare``).

As files (``--outputs DIR``: Tekton results, Argo output parameters, one value per file, no
newline) they are a few bytes each: Tekton carries results in the container's termination message
(4 KiB for every result of a step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import rules
from ..errors import SpecError
from ..numerics.stats import summarize

if TYPE_CHECKING:
    from ..store.records import RunRecord

#: The run counts reported, by the run states they count.
COUNTS = {"runs_succeeded": ("succeeded",), "runs_failed": ("failed", "timeout"), "runs_cancelled": ("cancelled",)}


@dataclass(frozen=True)
class RunOutputs:
    """The run step's outputs."""

    experiment_id: str
    #: metric name → value: ``NAME``, ``NAME_ci_low``, ``NAME_ci_high`` per declared metric (primary
    #: first), then the run counts; finite numbers only (KFP records them as doubles)
    metrics: dict[str, float] = field(default_factory=dict)
    primary: str = ""
    #: the best trial's parameters (``batch_size=32, workers=2``)
    trial: str = ""

    @property
    def primary_median(self) -> str:
        """The primary metric's median as text ("" when no run has a value)."""
        value = self.metrics.get(self.primary)
        return "" if value is None else f"{value:.6g}"

    def files(self) -> dict[str, str]:
        """File name → content, for ``--outputs DIR``."""
        return {"experiment-id": self.experiment_id, "primary-metric": self.primary,
                "primary-median": self.primary_median, "runs-failed": str(int(self.metrics.get("runs_failed", 0)))}


def run_outputs(store, experiment_id: str) -> RunOutputs:
    """The outputs of experiment ``experiment_id`` as the store has it."""
    record = store.experiment(experiment_id)
    runs = store.runs(experiment_id, logs=False)
    declared = record.declared_metrics()
    names = [str(m["name"]) for m in declared]
    primary = record.primary_metric() or ""
    ordered = ([primary] if primary else []) + [n for n in names if n != primary]
    best = _best_trial(runs, primary, rules.metric_goal(declared, primary) if primary else "maximize")
    metrics: dict[str, float] = {}
    chosen = [r for r in runs if r.trial_id == best and r.status == "succeeded"]
    for name in ordered:
        s = summarize([r.metrics[name] for r in chosen if name in r.metrics])
        for key, value in ((name, s.median), (f"{name}_ci_low", s.ci_low), (f"{name}_ci_high", s.ci_high)):
            if math.isfinite(value):
                metrics[key] = value
    for key, states in COUNTS.items():
        metrics[key] = float(sum(r.status in states for r in runs))
    trial = ", ".join(f"{k}={v}" for k, v in sorted(chosen[0].params.items())) if chosen else ""
    return RunOutputs(experiment_id, metrics, primary if primary in metrics else "", trial)


def _best_trial(runs: list[RunRecord], metric: str, goal: str) -> str | None:
    """The trial with the best median of ``metric`` (the first trial with a succeeded run without one)."""
    values: dict[str, list[float]] = {}
    for run in runs:
        if run.status == "succeeded":
            values.setdefault(run.trial_id, []).extend([run.metrics[metric]] if metric in run.metrics else [])
    scored = {t: summarize(v).median for t, v in values.items() if v}
    if not scored:
        return next(iter(values), None)
    return (max if goal == "maximize" else min)(scored, key=lambda t: scored[t])


def write_files(folder: Path, files: dict[str, str]) -> None:
    """One file per output in ``folder`` (made if missing), its value without a newline."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            (folder / name).write_text(value, encoding="utf-8")
    except OSError as e:
        raise SpecError(f"--outputs {folder}: cannot write the step's outputs: {e}") from e
