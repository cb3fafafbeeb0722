"""The runner's side of a Benchmark's status (``kubebench run --benchmark-ref NS/NAME/UID``): the
experiment id, ``progress`` and run counts as runs finish, the primary metric of the best trial, and
at the end the gate's verdict (``spec.gate``, what ``kubebench check`` does). Every write is a JSON
patch of ``/status`` fenced by the Benchmark's uid; a failed write is logged, never the run's failure.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any

from .. import rules
from ..backends.kube.api import Api
from ..backends.kube.config import KubernetesConfig
from ..errors import KubebenchError, SpecError
from ..numerics.stats import summarize
from . import kube
from .resource import GateSpec

if TYPE_CHECKING:
    from ..plan.plan import Plan, Run
    from ..store.records import RunRecord, RunResult
    from ..store.store import Store

log = logging.getLogger("kubebench")
#: Seconds between two writes for runs starting (a finished run always writes).
MIN_INTERVAL = 1.0


def parse_ref(ref: str) -> tuple[str, str, str]:
    """``NAMESPACE/NAME/UID``, or a SpecError."""
    parts = ref.split("/")
    if len(parts) != 3 or not all(parts):
        raise SpecError(f"--benchmark-ref {ref!r}: expected NAMESPACE/NAME/UID")
    return parts[0], parts[1], parts[2]


def counts(runs: list[RunRecord], planned: int) -> dict[str, int]:
    """Counted runs by state (the status's ``runs``)."""
    by = {s: sum(r.status == s for r in runs) for s in ("succeeded", "failed", "timeout", "cancelled", "running")}
    pending = max(0, planned - sum(by.values()))
    return {"planned": planned, "succeeded": by["succeeded"], "failed": by["failed"], "timedOut": by["timeout"],
            "cancelled": by["cancelled"], "running": by["running"], "pending": pending}


def _text(value: float) -> str:
    return "" if not math.isfinite(value) else f"{value:.6g}"


def primary(runs: list[RunRecord], metric: str, unit: str, goal: str) -> dict[str, Any] | None:
    """The primary metric of the best trial (by its median and the metric's goal), with the mean's CI."""
    trials: dict[str, list[RunRecord]] = {}
    for run in runs:
        if run.status == "succeeded" and metric in run.metrics:
            trials.setdefault(run.trial_id, []).append(run)
    if not trials:
        return None
    summaries = {t: summarize([r.metrics[metric] for r in rs]) for t, rs in trials.items()}
    best = (max if goal == "maximize" else min)(summaries, key=lambda t: summaries[t].median)
    s = summaries[best]
    label = ", ".join(f"{k}={v}" for k, v in sorted(trials[best][0].params.items()))[:256]
    cv = f"{s.cv * 100:.2g}%" if math.isfinite(s.cv) else ""
    return {"metric": metric[:128], "unit": unit[:64], "trial": label, "median": _text(s.median),
            "ciLow": _text(s.ci_low), "ciHigh": _text(s.ci_high), "cv": cv, "n": s.n}


class StatusWriter:
    """A :class:`kubebench.runner.Progress` writing the runner's fields of the Benchmark's status."""

    def __init__(self, ref: str, store: Store, experiment_id: str, config: KubernetesConfig | None = None) -> None:
        self.namespace, self.name, self.uid = parse_ref(ref)
        self.store, self.experiment_id = store, experiment_id
        self.api = Api(config or KubernetesConfig())
        self.planned = 0
        self._last = 0.0
        self.gate: GateSpec | None = None
        cr = kube.get(self.api, kube.BENCHMARKS, self.namespace, self.name)
        if cr is None or cr["metadata"]["uid"] != self.uid:
            raise SpecError(f"--benchmark-ref {ref}: no such Benchmark (it was deleted, or replaced by another)")
        gate = (cr.get("spec") or {}).get("gate")
        self.gate = GateSpec.model_validate(gate) if gate is not None else None

    def started(self, plan: Plan, skipped: int) -> None:
        self.planned = sum(not r.warmup for r in plan.runs)
        self.write(force=True)

    def run_started(self, run: Run) -> None:
        self.write()

    def run_finished(self, run: Run, result: RunResult) -> None:
        self.write(force=True)

    def added(self, runs: int) -> None:
        self.planned += runs

    def write(self, force: bool = False, extra: dict[str, Any] | None = None) -> None:
        """Write the counts and the primary metric (at most once a second unless ``force``)."""
        now = time.monotonic()
        if not force and now - self._last < MIN_INTERVAL:
            return
        self._last = now
        try:
            self._write(extra or {})
        except (KubebenchError, ValueError) as e:
            log.warning("could not write the status of Benchmark %s/%s: %s", self.namespace, self.name, e)

    def _write(self, extra: dict[str, Any]) -> None:
        runs = self.store.runs(self.experiment_id, logs=False)
        tally = counts(runs, max(self.planned, len(runs)))
        done = sum(tally[k] for k in ("succeeded", "failed", "timedOut", "cancelled"))
        fields: dict[str, Any] = {"experimentId": self.experiment_id, "progress": f"{done}/{tally['planned']}",
                                  "runs": tally, "dashboardPath": f"/experiments/{self.experiment_id}", **extra}
        record = self.store.experiment(self.experiment_id)
        name = record.primary_metric()
        if name:
            declared = next((m for m in record.declared_metrics() if m["name"] == name), {})
            found = primary(runs, name, str(declared.get("unit") or ""), rules.metric_goal(record.declared_metrics(), name))
            if found:
                fields["primary"] = found
        cr = {"metadata": {"uid": self.uid, "namespace": self.namespace, "name": self.name}, "status": {"x": 1}}
        kube.patch_status(self.api, cr, fields)

    def finish(self) -> None:
        """The final counts and, with ``spec.gate``, the gate's verdict."""
        gate = self._gate() if self.gate is not None else None
        self.write(force=True, extra={"gate": gate} if gate else None)
        self.api.close()

    def _gate(self) -> dict[str, Any]:
        from ..analyse.family import run_family
        from ..analyse.gating import family_verdict, series_check
        from ..present.check import headline

        assert self.gate is not None
        series = self.gate.series or self.store.experiment(self.experiment_id).series
        threshold = float(self.gate.threshold) if self.gate.threshold else None
        target = self.gate.series or self.experiment_id  # an experiment: against the experiments before it
        try:
            _, _, tests = series_check(self.store, [target], self.gate.metrics or None, threshold, self.gate.window)
        except KubebenchError as e:
            return {"against": series[:128], "verdict": "nothing-to-compare", "detail": str(e)[:1024]}
        if not tests:
            return {"against": series[:128], "verdict": "nothing-to-compare", "detail": "no earlier experiment to compare with"}
        outcomes = run_family(tests, self.gate.correction, float(self.gate.alpha))
        verdict = family_verdict(outcomes)
        return {"against": series[:128], "verdict": verdict, "regressed": sum(o.fails for o in outcomes),
                "tests": len(outcomes), "detail": headline(outcomes)[:1024]}


class Both:
    """Two progress observers as one (the terminal's and the status writer)."""

    def __init__(self, *observers: Any) -> None:
        self.observers = observers

    def __getattr__(self, name: str) -> Any:
        return lambda *args: [getattr(o, name)(*args) for o in self.observers] and None
