"""Sequential decisions stored with an experiment (schema 10): each trial's verdict against the
base ``kubebench run --decide-against`` named, with the runs it took. No SQLAlchemy here: the
sqlite3 reader and the web read these too."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import field_validator

from .records import Record

#: Columns of ``trial_decisions`` in the order both ways of reading a store select them.
DECISION_COLUMNS = ("experiment_id", "trial_id", "metric", "goal", "against", "base_experiments", "verdict",
                    "runs", "base_runs", "min_runs", "max_runs", "ratio", "ci_low", "ci_high", "band_low",
                    "band_high", "alpha", "beta", "margin", "reason", "sequential", "decided_at")


class DecisionRecord(Record):
    """One trial's decision against its base: how it ended, after how many runs, and why."""

    experiment_id: str
    trial_id: str
    metric: str
    goal: Literal["maximize", "minimize"]
    #: what it was decided against, in words (``experiment bench-…``, ``series bench (3 experiments …)``)
    against: str
    base_experiments: list[str]
    verdict: Literal["improved", "regressed", "unchanged", "inconclusive"]
    #: candidate runs with a value when it was decided, of at most ``max_runs``; the base's values
    runs: int
    base_runs: int
    min_runs: int
    max_runs: int
    #: candidate / base, and its 1 − 2α (``ci``) and 1 − 2β (``band``) repeated intervals (None: none)
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    band_low: float | None = None
    band_high: float | None = None
    alpha: float
    beta: float
    margin: float
    reason: str = ""
    #: decided by the sequential rule (always, for now: a fixed comparison is not stored)
    sequential: bool = True
    decided_at: float
    #: the trial's parameters (read with the trial; not a column of the table)
    params: dict[str, object] = {}

    @field_validator("base_experiments", "params", mode="before")
    @classmethod
    def _json_text(cls, value: object) -> object:
        return json.loads(value) if isinstance(value, str) else value

    @field_validator("ratio", "ci_low", "ci_high", "band_low", "band_high", mode="before")
    @classmethod
    def _finite(cls, value: object) -> object:
        return None if isinstance(value, float) and not math.isfinite(value) else value

    @property
    def change(self) -> float | None:
        """Signed relative change in the goal's direction, positive = better."""
        if self.ratio is None:
            return None
        return self.ratio - 1 if self.goal == "maximize" else 1 - self.ratio

    def row(self) -> dict[str, object]:
        """The table's columns."""
        return self.model_dump(exclude={"params"})


def decision_records(rows: Iterable[Sequence[Any]], params: dict[str, dict[str, object]]) -> list[DecisionRecord]:
    """DecisionRecords from rows of :data:`DECISION_COLUMNS`, with their trial's parameters."""
    found = []
    for row in rows:
        values = dict(zip(DECISION_COLUMNS, row))
        found.append(DecisionRecord(**values, params=params.get(str(values["trial_id"]), {})))
    return found
