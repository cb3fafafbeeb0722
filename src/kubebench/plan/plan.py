"""The plan of an experiment: trials (one per parameter point) × repeats = runs, with stable ids.

Ids are content hashes, so planning the same spec under the same experiment id again gives the
same ids: that is what makes a killed or repeated ``kubebench run --id`` resume.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from dataclasses import dataclass

from .. import limits
from ..errors import PlanError
from ..spec.model import BenchmarkSpec
from .sweep import expand


@dataclass(frozen=True)
class Trial:
    """One parameter point of the sweep."""

    id: str
    index: int
    params: dict[str, object]


@dataclass(frozen=True)
class Run:
    """One execution of a trial; warm-up runs are done first and not counted."""

    id: str
    trial: Trial
    repeat: int
    warmup: bool = False

    @property
    def label(self) -> str:
        """Short human description: parameters and repeat (counted from 0, as in tables and JSON)."""
        params = ", ".join(f"{k}={v}" for k, v in self.trial.params.items())
        kind = f"warm-up {self.repeat}" if self.warmup else f"repeat {self.repeat}"
        return f"{params or 'no parameters'} ({kind})"


@dataclass(frozen=True)
class Plan:
    """Everything to run for one experiment, in execution order."""

    experiment_id: str
    job_fingerprint: str
    trials: tuple[Trial, ...]
    runs: tuple[Run, ...]


def digest(*parts: object, length: int = 12) -> str:
    """A short stable hash of JSON-serialisable parts."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def new_experiment_id(name: str, now: float | None = None) -> str:
    """``<name, lowercased, other characters → '-'>-<YYYYMMDDHHmm>-<4 random>``, as Kubebench did."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower())[:40].strip("-") or "benchmark"
    stamp = time.strftime("%Y%m%d%H%M", time.gmtime(now))
    suffix = "".join(random.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=4))
    return f"{slug}-{stamp}-{suffix}"


def make_plan(spec: BenchmarkSpec, experiment_id: str, job_fingerprint: str, repeats: int | None = None) -> Plan:
    """Trials from the sweep and runs ordered in rounds: every trial's n-th repeat before any (n+1)-th.

    Rounds (as asv does) spread slow drift of the machine over all trials instead of one.
    """
    points = expand(spec.parameters, spec.sweep, spec.include, spec.exclude)
    count = repeats if repeats is not None else spec.first_repeats
    _check_runs(len(points), count, spec.warmup_runs)
    trials = tuple(
        Trial(id=digest(experiment_id, job_fingerprint, p, length=10), index=i, params=p) for i, p in enumerate(points)
    )
    warmups = [make_run(t, r, True) for r in range(spec.warmup_runs) for t in trials]
    counted = [make_run(t, r) for r in range(count) for t in trials]
    return Plan(experiment_id, job_fingerprint, trials, tuple(warmups + counted))


def _check_runs(points: int, repeats: int, warmups: int) -> None:
    runs, limit = points * (repeats + warmups), limits.RUNS.value()
    if runs > limit:
        raise PlanError(f"repeats: the plan has {runs:,} runs ({points:,} parameter points × ({repeats} repeats + "
                        f"{warmups} warm-up runs)), more than the limit of {limit:,}; plan fewer, or raise "
                        f"{limits.RUNS.env}")


def make_run(trial: Trial, repeat: int, warmup: bool = False) -> Run:
    """The run of ``trial`` with this repeat index; its id depends only on the two."""
    return Run(id=digest(trial.id, repeat, warmup), trial=trial, repeat=repeat, warmup=warmup)
