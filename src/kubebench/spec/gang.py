"""The job's gang scheduling and topology, as the spec gives them:

.. code-block:: yaml

    job:
      gang: {scheduler: volcano, min_available: "{{ workers }}", queue: research,
             priority_class: high, schedule_timeout: 60s}
      topology: {required: cloud.google.com/gce-topology-block}

``gang`` is rendered into each kind's own field (``runPolicy.schedulingPolicy`` of the Kubeflow v1
kinds and MPIJob; a runtime with ``podGroupPolicy`` for a TrainJob, see ``render.gang``); the
operator creates the PodGroup only when it was started with gang scheduling on
(``--gang-scheduler-name``: a cluster setting, which ``kubebench doctor`` and each run check).
``topology`` asks Kueue's topology-aware scheduling to place every pod of a replica type within
one domain of that level (``required``) or as close as it can (``preferred``).
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import Field, field_validator, model_validator

from ..durations import parse_duration
from .base import Model

GANG_SCHEDULERS = ("volcano", "scheduler-plugins")
#: A Kubernetes label key (the topology level), or a template.
_LABEL_KEY = r"^(([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?|.*\{\{.*\}\}.*)$"


class GangSpec(Model):
    """``job.gang``: all of a job's pods scheduled together, or none (see the module's docstring)."""

    scheduler: Literal["volcano", "scheduler-plugins"]
    #: Pods that must fit at once (default: every replica, as the operators default it).
    min_available: Union[int, str, None] = None
    #: Volcano's queue (the operator's default: ``default``).
    queue: str | None = Field(None, min_length=1, max_length=253)
    #: The PriorityClass of the PodGroup (Volcano) and its pods.
    priority_class: str | None = Field(None, min_length=1, max_length=253)
    #: scheduler-plugins: how long the PodGroup may wait to be placed whole (``scheduleTimeoutSeconds``).
    schedule_timeout: float | None = None

    @field_validator("schedule_timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float | None:
        return None if value is None else parse_duration(value)

    @field_validator("min_available")
    @classmethod
    def _positive(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value < 1:
            raise ValueError(f"min_available must be at least 1, got {value}")
        return value


class TopologySpec(Model):
    """``job.topology``: Kueue's topology-aware scheduling of each replica type's pods."""

    required: str | None = Field(None, pattern=_LABEL_KEY, max_length=317)
    preferred: str | None = Field(None, pattern=_LABEL_KEY, max_length=317)

    @model_validator(mode="after")
    def _one(self) -> "TopologySpec":
        if (self.required is None) == (self.preferred is None):
            raise ValueError("give one of `required` or `preferred` (a node label naming the topology level)")
        return self
