"""Typed model of a benchmark spec (``apiVersion: kubebench/v1``, ``kind: Benchmark``).

String fields of ``job`` may hold Jinja2 expressions over the parameters (``"{{ workers }}"``);
they are checked for shape here and for their final type when each trial is rendered.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Union

from pydantic import AfterValidator, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from .. import METRIC_NAME, registry
from ..durations import parse_duration
from ..rules import AUTO_PROCESSES, DEFAULT_RUNTIME
from .base import Model, PluginConfig
from .data import DataSpec
from .efficiency import Prices, Reference
from .gang import GangSpec, TopologySpec
from .telemetry import TelemetryConfig

JOB_KINDS = ("Process", "PyTorchJob", "TFJob", "MPIJob", "JAXJob", "XGBoostJob", "TrainJob", "Job", "Serving")
#: A Kubernetes object's name (a DNS-1123 subdomain).
OBJECT_NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_NAME_OR_TEMPLATE = rf"^({OBJECT_NAME}|.*\{{\{{.*\}}\}}.*)$"

Scalar = Union[bool, int, float, str, None]
ParamValue = Union[Scalar, list[Scalar]]


def env_name(name: str) -> str:
    """An environment variable's name as every process start accepts it: not empty, no ``=``, no NUL."""
    if not name or "=" in name or "\0" in name:
        raise ValueError(f"environment variable name {name!r} must not be empty or hold '=' or a NUL character")
    return name


EnvName = Annotated[str, AfterValidator(env_name)]


class ServerSpec(Model):
    """``job.server`` of a ``kind: Serving`` job: the inference server its load generator measures.

    Locally each replica is a process given ``KUBEBENCH_SERVER_PORT`` (a free port; ``$(VAR)`` in its
    command is expanded as the kubelet does); on Kubernetes a Deployment and a Service on ``port``.
    The load generator starts once every replica answers ``readiness`` with 200, and gets
    ``KUBEBENCH_SERVER_URL`` (``http://host:port`` + ``api_path``; several replicas locally: comma-separated).
    """

    command: list[str] = Field(default_factory=list)
    image: str = "python:3.11-slim"
    replicas: Union[int, str] = 1
    port: Union[int, str] = 8000
    readiness: str = Field("/health", pattern=r"^/")
    api_path: str = "/v1"
    startup_timeout: float = 600.0
    env: dict[EnvName, Union[str, int, float, bool]] = Field(default_factory=dict)
    resources: dict[str, Union[str, int, float]] = Field(default_factory=dict)

    @field_validator("command", mode="before")
    @classmethod
    def _stringify_command(cls, value: object) -> object:
        if isinstance(value, list):
            return [v if isinstance(v, str) else _scalar_text(v) for v in value]
        return value

    @field_validator("startup_timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)

    @model_validator(mode="after")
    def _has_command(self) -> "ServerSpec":
        if not self.command:
            raise ValueError("give the server's `command` (locally it runs as a process)")
        return self


class JobSpec(Model):
    """The job shorthand, or a reference to a template rendering a whole manifest."""

    kind: str = "Process"
    workers: Union[int, str] = 1
    image: str = "python:3.11-slim"
    command: list[str] = Field(default_factory=list)
    env: dict[EnvName, Union[str, int, float, bool]] = Field(default_factory=dict)
    resources: dict[str, Union[str, int, float]] = Field(default_factory=dict)
    working_dir: str | None = None
    template: str | None = None
    #: Kubernetes: node labels every pod must match, and the taints its pods tolerate.
    node_selector: dict[str, Union[str, int, float, bool]] = Field(default_factory=dict)
    tolerations: list[dict[str, Union[str, int]]] = Field(default_factory=list)
    #: MPIJob: mpi-operator's ``kubeflow.org/v2beta1``, or the training operator's ``kubeflow.org/v1``.
    mpi_api_version: Literal["kubeflow.org/v2beta1", "kubeflow.org/v1"] = "kubeflow.org/v2beta1"
    #: ``kind: Serving``: the server (the job's own ``command`` is its load generator).
    server: ServerSpec | None = None
    #: ``kind: TrainJob``: the (Cluster)TrainingRuntime it runs on (``torch-distributed``,
    #: ``jax-distributed``, ``xgboost-distributed``, or a cluster's own); with ``template:``, the one
    #: the template's TrainJob names.
    runtime: str = Field(DEFAULT_RUNTIME, max_length=253, pattern=_NAME_OR_TEMPLATE)
    #: Kubernetes: schedule all the job's pods together or none (Volcano, scheduler-plugins); see ``spec.gang``.
    gang: GangSpec | None = None
    #: Kubernetes with Kueue: place each replica type's pods within one topology domain; see ``spec.gang``.
    topology: TopologySpec | None = None
    #: Processes (ranks) each replica starts: ``auto`` (the GPUs a replica requests, else 1) or a
    #: number. PyTorchJob and TrainJob start them through ``torchrun --nproc-per-node``, an MPIJob
    #: through ``slotsPerWorker``; the other kinds run one process per replica.
    processes_per_replica: Union[int, str] = AUTO_PROCESSES

    @field_validator("command", mode="before")
    @classmethod
    def _stringify_command(cls, value: object) -> object:
        # YAML turns `--steps, 20` into an int; a command line is strings.
        if isinstance(value, list):
            return [v if isinstance(v, str) else _scalar_text(v) for v in value]
        return value

    @field_validator("processes_per_replica")
    @classmethod
    def _processes(cls, value: int | str) -> int | str:
        text = str(value)
        if text == AUTO_PROCESSES or "{{" in text or (text.isdigit() and int(text) >= 1):
            return value
        raise ValueError(f"{value!r} is not a number of processes (at least 1) or 'auto'")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if "{{" not in kind and kind not in JOB_KINDS:
            raise ValueError(f"unknown job kind {kind!r}; valid: {', '.join(JOB_KINDS)}")
        return kind

    @model_validator(mode="after")
    def _command_or_template(self) -> "JobSpec":
        if self.template and self.command:
            raise ValueError("give either `command` (the shorthand) or `template`, not both")
        if not self.template and not self.command:
            raise ValueError("give `command` (the shorthand) or `template` (a .j2 or .jsonnet manifest)")
        if self.template and not self.template.endswith((".j2", ".jinja", ".jinja2", ".jsonnet")):
            raise ValueError(f"template {self.template!r} must end with .j2 / .jinja2 (Jinja2) or .jsonnet")
        if self.kind == "Serving" and (self.server is None or self.template):
            raise ValueError("kind: Serving needs `server:` (the inference server) and `command` (its load generator)")
        if self.server is not None and self.kind not in ("Serving",) and "{{" not in self.kind:
            raise ValueError(f"`server:` belongs to kind: Serving, not kind: {self.kind}")
        if self.processes_per_replica != AUTO_PROCESSES and self.template:
            raise ValueError("`processes_per_replica:` belongs to the shorthand; a template sets its operator's own "
                             "field (nprocPerNode, numProcPerNode, slotsPerWorker)")
        if self.runtime != DEFAULT_RUNTIME and not self.template and self.kind not in ("TrainJob",) \
                and "{{" not in self.kind:
            raise ValueError(f"`runtime:` names a TrainJob's (Cluster)TrainingRuntime, not one of kind: {self.kind}")
        return self


def _scalar_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


class MetricSpec(Model):
    """A metric the benchmark measures; ``required`` ones missing from a run fail it."""

    name: str = Field(pattern=f"^{METRIC_NAME}$")
    unit: str = ""
    goal: Literal["maximize", "minimize"] = "maximize"
    primary: bool = False
    required: bool = True


def _union_of(group: str) -> object:
    configs = tuple(registry.load(group, name).Config for name in registry.names(group))
    if len(configs) == 1:
        return configs[0]
    return Annotated[Union[configs], Field(discriminator="kind")]


if TYPE_CHECKING:
    # The unions are built at run time from the plugins installed (built-ins plus entry points);
    # a type checker sees what every member shares.
    PostprocessConfig = PluginConfig
    BackendConfig = PluginConfig
    ReporterConfig = PluginConfig
else:
    PostprocessConfig = _union_of("postprocessors")
    BackendConfig = _union_of("backends")
    ReporterConfig = _union_of("reporters")


class AdaptiveRepeats(Model):
    """``repeats: {min: 3, max: 20, target_ci: 0.02}``: add runs to a trial until the 95% CI
    half-width of its primary metric is below ``target_ci`` × mean, or ``max`` runs are done.
    """

    min: int = Field(3, ge=2, le=10_000)
    max: int = Field(20, ge=2, le=10_000)
    target_ci: float = Field(0.02, gt=0, lt=1)

    @model_validator(mode="after")
    def _ordered(self) -> "AdaptiveRepeats":
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) must be at least min ({self.min})")
        return self


def _repeats_kind(value: object) -> str:
    return "adaptive" if isinstance(value, (dict, AdaptiveRepeats)) else "fixed"


Repeats = Annotated[
    Union[Annotated[int, Field(ge=1, le=10_000), Tag("fixed")], Annotated[AdaptiveRepeats, Tag("adaptive")]],
    Discriminator(_repeats_kind),
]


class CapacitySearch(Model):
    """``search:``: the highest value of ``parameter`` (a load: rate, concurrency) at which every bound
    of ``slo`` holds, found by bisection between ``low`` and ``high`` for every point of the sweep.

    Each probe is repeated (``min`` … ``max`` runs) until the confidence interval of each bounded
    metric's mean lies on one side of its bound; a probe still undecided at ``max`` runs is judged
    by its means. The search stops when the bracket is narrower than ``resolution`` × its low end.
    """

    parameter: str = Field(min_length=1)
    low: float = Field(gt=0)
    high: float = Field(gt=0)
    #: Upper bounds on run metrics: ``{ttft_p99: 2s, tpot_p99: 100ms, error_rate: 0.01}``.
    slo: dict[str, Union[float, str]] = Field(min_length=1)
    resolution: float = Field(0.05, gt=0, lt=1)
    scale: Literal["log", "linear"] = "log"
    integer: bool = False
    min: int = Field(2, ge=1, le=100)
    max: int = Field(6, ge=1, le=100)
    confidence: float = Field(0.95, gt=0.5, lt=1)

    @field_validator("slo")
    @classmethod
    def _bounds(cls, slo: dict[str, Union[float, str]]) -> dict[str, float]:
        return {name: parse_duration(value, "a latency bound") for name, value in slo.items()}

    @model_validator(mode="after")
    def _ordered(self) -> "CapacitySearch":
        if self.high <= self.low:
            raise ValueError(f"high ({self.high:g}) must be above low ({self.low:g})")
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) must be at least min ({self.min})")
        return self


class BenchmarkSpec(Model):
    """A whole benchmark: job, parameters to sweep, repeats, metrics and where to run."""

    api_version: Literal["kubebench/v1"] = Field("kubebench/v1", alias="apiVersion")
    kind: Literal["Benchmark"] = "Benchmark"
    name: str = Field(min_length=1, max_length=63)
    description: str = ""
    #: The series this benchmark's experiments belong to (history, change points, `kubebench check`);
    #: default: its ``name``. Specs that measure the same thing under different names share one.
    series: str | None = Field(None, min_length=1, max_length=128)
    job: JobSpec
    parameters: dict[str, ParamValue] = Field(default_factory=dict)
    sweep: Literal["grid", "zip"] = "grid"
    include: list[dict[str, Scalar]] = Field(default_factory=list)
    exclude: list[dict[str, Scalar]] = Field(default_factory=list)
    repeats: Repeats = 1
    warmup_runs: int = Field(0, ge=0, le=1000)
    timeout: float = 3600.0
    metrics: list[MetricSpec] = Field(default_factory=list)
    postprocess: list[PostprocessConfig] = Field(default_factory=list)
    backend: BackendConfig = Field("local", validate_default=True)
    data_root: str | None = None
    #: Shared storage of the runs' folders: a folder or an fsspec URL (s3://bucket/prefix, gs://…).
    storage: str | None = None
    #: Runs in flight at once (each is one job; warm-up runs still finish before counted ones).
    parallelism: int = Field(1, ge=1, le=1000)
    #: Further attempts of a run that failed for its infrastructure, not for itself: an API server
    #: answering 5xx/429 or unreachable after the client's own retries, a pod evicted or preempted,
    #: a lost node, a machine that cannot start another process (EAGAIN, ENOMEM, EMFILE). Never
    #: retried: the workload's own exit code or signal, out of memory, a timeout, a missing metric,
    #: a failed post-processor, an image that cannot be pulled, a refused request (403, 422).
    #: Every attempt is recorded (``run_attempts``; shown by ``kubebench show``).
    retries: int = Field(0, ge=0, le=20)
    #: Telemetry of every run (on by default): process tree, machine and GPUs, or Prometheus on Kubernetes.
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    #: Reporters called with each finished run (``[{kind: pushgateway, url: …}]``).
    report: list[ReporterConfig] = Field(default_factory=list)
    #: What a run costs: USD per device-hour and per CPU-core-hour (see ``kubebench.spec.efficiency``).
    prices: Prices | None = None
    #: Published figures (with their source) that results are reported as a fraction of.
    reference: list[Reference] = Field(default_factory=list)
    #: Capacity under an SLO: bisection over a load parameter instead of a fixed list of its values.
    search: CapacitySearch | None = None
    #: Input data fetched or made before the first run, once per cache key (see kubebench.spec.data).
    data: DataSpec | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("reference", mode="before")
    @classmethod
    def _one_or_more(cls, value: object) -> object:
        return [value] if isinstance(value, dict) else value

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)

    @field_validator("backend", mode="before")
    @classmethod
    def _backend_name(cls, value: object) -> object:
        value = {"kind": value} if isinstance(value, str) else value
        known = registry.names("backends")
        if isinstance(value, dict) and value.get("kind") not in known:
            raise ValueError(f"unknown backend {value.get('kind')!r}; valid: {', '.join(sorted(known))}")
        return value

    @field_validator("metrics")
    @classmethod
    def _one_primary(cls, metrics: list[MetricSpec]) -> list[MetricSpec]:
        names = [m.name for m in metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"metric names must be unique, got {names}")
        if sum(m.primary for m in metrics) > 1:
            raise ValueError("at most one metric may be `primary: true`")
        return metrics

    @property
    def first_repeats(self) -> int:
        """Runs per trial planned up front: all of them, or the adaptive minimum."""
        return self.repeats.min if isinstance(self.repeats, AdaptiveRepeats) else self.repeats

    @model_validator(mode="after")
    def _adaptive_needs_a_metric(self) -> "BenchmarkSpec":
        if isinstance(self.repeats, AdaptiveRepeats) and not self.metrics:
            raise ValueError("adaptive repeats need a metric to converge on: declare `metrics:`")
        return self

    @model_validator(mode="after")
    def _search_owns_its_parameter(self) -> "BenchmarkSpec":
        if self.search is None:
            return self
        if self.search.parameter in self.parameters:
            raise ValueError(f"search.parameter {self.search.parameter!r} is searched: remove it from `parameters`")
        if isinstance(self.repeats, AdaptiveRepeats):
            raise ValueError("a search repeats each probe itself (search.min, search.max): give `repeats` no policy")
        return self

    @property
    def primary_metric(self) -> MetricSpec | None:
        """The metric tables and comparisons lead with: the one marked primary, else the first."""
        return next((m for m in self.metrics if m.primary), self.metrics[0] if self.metrics else None)


class LoadedSpec(Model):
    """A validated spec with where it came from (templates and working dirs are relative to it)."""

    spec: BenchmarkSpec
    source: str
    base_dir: Path
    text: str
    template_text: str | None = None
