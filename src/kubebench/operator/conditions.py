"""Conditions of a Benchmark (``metav1.Condition`` shape) and the ``state`` derived from them (pure).

The types (api-conventions.md: adjectives or past tense, reason one CamelCase word):

- ``Accepted``: the spec loads and plans (``SpecValid``), or not (``InvalidSpec``, ``CrossNamespace``,
  ``SpecNotFound`` while its ConfigMap is missing);
- ``Suspended``: ``spec.suspend`` holds the runner (``Suspended``) or not (``Running``, ``Resumed``);
- ``Complete`` and ``Failed``: the terminal pair; Failed's reasons are ``InvalidSpec``, ``RunsFailed``,
  ``RunnerFailed`` (it crashed or was killed beyond its retries) and ``RunnerDeleted``;
- ``Regressed``: the gate's verdict (``SignificantRegression``, ``NoSignificantChange``,
  ``Inconclusive``, ``NothingToCompare``), ``Unknown`` until it is known.

``state`` is one word for ``kubectl wait --for=jsonpath='{.status.state}'=Succeeded`` and Argo's
``successCondition``, which cannot read a list of conditions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .resource import MESSAGE_MAX

TYPES = ("Accepted", "Suspended", "Complete", "Failed", "Regressed")


@dataclass(frozen=True)
class Want:
    """A condition as the controller wants it."""

    status: str
    reason: str
    message: str = ""


def timestamp(now: float) -> str:
    """RFC 3339 in UTC, whole seconds (``metav1.Time``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def merged(current: list[dict], wanted: dict[str, Want], generation: int, now: float) -> list[dict]:
    """The conditions ``wanted`` in the order of :data:`TYPES`; ``lastTransitionTime`` changes only
    when a condition's status does."""
    before = {c.get("type"): c for c in current or []}
    out = []
    for kind in TYPES:
        if kind not in wanted:
            continue
        want, old = wanted[kind], before.get(kind) or {}
        since = old.get("lastTransitionTime") if old.get("status") == want.status else None
        out.append({"type": kind, "status": want.status, "reason": want.reason, "message": want.message[:MESSAGE_MAX],
                    "observedGeneration": generation, "lastTransitionTime": since or timestamp(now)})
    return out


def is_true(conditions: list[dict], kind: str) -> bool:
    """Whether the condition ``kind`` is True."""
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions or [])


def state(wanted: dict[str, Want], started: bool, scheduled: bool) -> str:
    """The one-word state derived from the conditions (the runner Job's start makes Pending Running)."""
    if wanted.get("Failed", Want("False", "")).status == "True":
        return "Failed"
    if wanted.get("Complete", Want("False", "")).status == "True":
        return "Succeeded"
    if wanted.get("Suspended", Want("False", "")).status == "True":
        return "Suspended"
    if scheduled:
        return "Scheduled"
    return "Running" if started else "Pending"
