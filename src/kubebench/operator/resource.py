"""The ``Benchmark`` resource's spec and status as typed models; the CRD's schema is generated from
them (:mod:`.crd`), so that what the API server accepts and what the controller loads are one model.

Kubernetes conventions (api-conventions.md): camelCase fields, no floating-point numbers in the spec
(``alpha`` is a string), metric values in the status as strings (as Trainer and Katib write them),
``metav1.Condition``-shaped conditions, and a status bounded in size: counters and one primary
metric, never a list per run (those live in the store and the dashboard).
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import ConfigDict, Field, field_validator, model_validator

from .. import ids
from ..spec.base import Model
from ..spec.model import BenchmarkSpec, ParamValue

_DNS_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
_CRON_FIELD = r"[0-9A-Za-z*?/,-]+"
CRON = rf"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|{_CRON_FIELD}( +{_CRON_FIELD}){{4}})$"
_DECIMAL = r"^(0|[1-9][0-9]*)?(\.[0-9]+)?$"
#: Conditions a status holds at most (one per type, as Trainer's TrainJob bounds them).
MAX_CONDITIONS = 8
MESSAGE_MAX = 1024


class Resource(Model):
    """Base of the resource's models: camelCase keys, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ConfigMapKeyRef(Resource):
    """A key of a ConfigMap in the Benchmark's namespace."""

    name: str = Field(min_length=1, max_length=253, pattern=_DNS_NAME)
    key: str = Field("benchmark.yaml", min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")


class BenchmarkFrom(Resource):
    """Where the spec is when it is not inline: a ConfigMap holding it and the files beside it."""

    config_map_key_ref: ConfigMapKeyRef = Field(alias="configMapKeyRef")


class SecretKeyRef(Resource):
    """A key of a Secret in the Benchmark's namespace."""

    name: str = Field(min_length=1, max_length=253, pattern=_DNS_NAME)
    key: str = Field("url", min_length=1, max_length=253)


class RunnerSpec(Resource):
    """The pod that runs the benchmark (``kubebench run``): image, identity and store."""

    image: Optional[str] = Field(None, min_length=1)
    service_account_name: str = Field("kubebench", alias="serviceAccountName", pattern=_DNS_NAME, max_length=253)
    #: The store's SQLAlchemy URL, from a Secret (default: the Secret ``kubebench-store`` of ``deploy manifests``).
    store_secret_ref: Optional[SecretKeyRef] = Field(None, alias="storeSecretRef")
    #: The ReadWriteMany claim of the runs' folders.
    claim: str = Field("kubebench", pattern=_DNS_NAME, max_length=253)


class GateSpec(Resource):
    """What ``kubebench check`` does after the runs: this experiment against the series before it."""

    series: Optional[str] = Field(None, min_length=1, max_length=128)
    metrics: list[str] = Field(default_factory=list, max_length=32)
    correction: Literal["holm", "bh"] = "holm"
    alpha: str = Field("0.05", pattern=_DECIMAL)
    threshold: Optional[str] = Field(None, pattern=_DECIMAL)
    window: int = Field(10, ge=1, le=1000)

    @field_validator("alpha")
    @classmethod
    def _alpha(cls, value: str) -> str:
        if not 0 < float(value) <= 0.5:
            raise ValueError(f"alpha {value} must be in (0, 0.5]")
        return value


class ScheduleSpec(Resource):
    """A benchmark run on a schedule: one experiment per tick, all in one series (a CronJob)."""

    cron: str = Field(pattern=CRON)
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] = Field("Forbid", alias="concurrencyPolicy")
    successful_history_limit: int = Field(3, ge=0, le=100, alias="successfulHistoryLimit")
    failed_history_limit: int = Field(3, ge=0, le=100, alias="failedHistoryLimit")
    time_zone: Optional[str] = Field(None, alias="timeZone", min_length=1)


class BenchmarkResourceSpec(Resource):
    """``spec`` of a Benchmark: the benchmark (inline or from a ConfigMap) and how to run it."""

    benchmark: Optional[BenchmarkSpec] = None
    benchmark_from: Optional[BenchmarkFrom] = Field(None, alias="benchmarkFrom")
    #: Parameters set on top of the spec's (``run --set``); each must be a parameter of the spec.
    params: dict[str, ParamValue] = Field(default_factory=dict)
    #: Labels of the experiment (``run --label``).
    labels: dict[str, str] = Field(default_factory=dict)
    #: The experiment to run or resume; unset: one derived from the Benchmark's name and uid.
    experiment_id: Optional[str] = Field(None, alias="experimentId", pattern=ids.PATTERN, max_length=ids.MAX_LENGTH)
    #: True: the runner Job is suspended (runs in flight finish, no new run starts); false resumes.
    suspend: bool = False
    gate: Optional[GateSpec] = None
    runner: RunnerSpec = Field(default_factory=RunnerSpec)
    ttl_seconds_after_finished: Optional[int] = Field(None, alias="ttlSecondsAfterFinished", ge=0)
    schedule: Optional[ScheduleSpec] = None

    @model_validator(mode="after")
    def _one_source(self) -> "BenchmarkResourceSpec":
        if (self.benchmark is None) == (self.benchmark_from is None):
            raise ValueError("give exactly one of spec.benchmark (the spec inline) and spec.benchmarkFrom (a ConfigMap)")
        if self.schedule is not None and self.experiment_id:
            raise ValueError("a scheduled Benchmark starts a new experiment each time: drop spec.experimentId")
        return self


class Condition(Resource):
    """A ``metav1.Condition``."""

    type: str = Field(pattern=r"^[A-Z][A-Za-z]*$", max_length=316)
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", max_length=1024)
    message: str = Field("", max_length=MESSAGE_MAX)
    observed_generation: Optional[int] = Field(None, alias="observedGeneration", ge=0)
    last_transition_time: str = Field(alias="lastTransitionTime")


class RunCounts(Resource):
    """How many counted runs are in each state (warm-up runs are not counted)."""

    planned: int = Field(0, ge=0)
    succeeded: int = Field(0, ge=0)
    failed: int = Field(0, ge=0)
    timed_out: int = Field(0, ge=0, alias="timedOut")
    cancelled: int = Field(0, ge=0)
    running: int = Field(0, ge=0)
    pending: int = Field(0, ge=0)


class PrimaryMetric(Resource):
    """The primary metric of the best trial: its median over the repeats with the mean's 95% CI."""

    metric: str = Field(max_length=128)
    unit: str = Field("", max_length=64)
    trial: str = Field("", max_length=256)
    median: str = Field(max_length=32)
    ci_low: str = Field("", alias="ciLow", max_length=32)
    ci_high: str = Field("", alias="ciHigh", max_length=32)
    cv: str = Field("", max_length=32)
    n: int = Field(0, ge=0)


class GateStatus(Resource):
    """The gate's verdict over the family of trial × metric tests."""

    against: str = Field("", max_length=128)
    verdict: Literal["unchanged", "improved", "regressed", "inconclusive", "nothing-to-compare", "error"]
    regressed: int = Field(0, ge=0)
    tests: int = Field(0, ge=0)
    detail: str = Field("", max_length=MESSAGE_MAX)


State = Literal["Pending", "Running", "Suspended", "Succeeded", "Failed", "Scheduled"]


class BenchmarkStatus(Resource):
    """``status`` of a Benchmark. The controller writes ``observedGeneration``, ``conditions``,
    ``state``, ``runnerJob`` and the times; the runner writes ``experimentId``, ``progress``,
    ``runs``, ``primary``, ``gate`` and ``dashboardPath``. Each field has one writer, so merge
    patches of the two never clobber each other."""

    observed_generation: Optional[int] = Field(None, alias="observedGeneration", ge=0)
    state: Optional[State] = None
    conditions: list[Condition] = Field(default_factory=list, max_length=MAX_CONDITIONS)
    runner_job: Optional[str] = Field(None, alias="runnerJob", max_length=63)
    start_time: Optional[str] = Field(None, alias="startTime")
    completion_time: Optional[str] = Field(None, alias="completionTime")
    last_schedule_time: Optional[str] = Field(None, alias="lastScheduleTime")
    experiment_id: Optional[str] = Field(None, alias="experimentId", max_length=ids.MAX_LENGTH)
    progress: Optional[str] = Field(None, pattern=r"^[0-9]+/[0-9]+$", max_length=24)
    runs: Optional[RunCounts] = None
    primary: Optional[PrimaryMetric] = None
    gate: Optional[GateStatus] = None
    dashboard_path: Optional[str] = Field(None, alias="dashboardPath", max_length=128)


def dns_label(text: str, limit: int = 63) -> str:
    """``text`` made a DNS label: lowercase, other characters ``-``, at most ``limit`` characters."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower())[:limit].strip("-")
    return label or "x"
