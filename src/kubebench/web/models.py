"""Response models of the API: they document it at ``/docs`` and keep its answers to this shape."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from .forms import Problem as LocatedProblem


class _Open(BaseModel):
    # answers may carry more than documented (additive changes); nothing is dropped on the way out
    model_config = ConfigDict(extra="allow")


class Problem(BaseModel):
    detail: str


class LaunchProblems(BaseModel):
    detail: str
    errors: list[LocatedProblem]


class Config(BaseModel):
    read_only: bool
    auth: bool = True
    version: str


class _Experiment(_Open):
    # what a summary and a detail share; ``runs`` is a count in one and the list of runs in the other
    id: str
    name: str
    backend: str
    created_at: float
    updated_at: float
    state: str = Field(description="pending, running, interrupted (partly done, nothing runs it), succeeded, "
                                   "failed or cancelled")
    partial: bool = Field(False, description="failed, yet some runs succeeded (the dashboard shows it as partial)")
    runs_by_status: dict[str, int]
    launched_here: bool = Field(False, description="launched by this server, which can therefore cancel it")


class ExperimentSummary(_Experiment):
    runs: int = Field(description="counted runs (warm-up runs excluded)")


class ExperimentList(BaseModel):
    total: int
    offset: int
    limit: int
    counts: dict[str, int] = Field(description="experiments of the filtered set by state")
    items: list[ExperimentSummary]


class Summary(_Open):
    n: int
    mean: Optional[float] = None
    median: Optional[float] = None
    stdev: Optional[float] = None
    cv: Optional[float] = None
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None


class Trial(_Open):
    trial_id: str
    index: int
    params: dict[str, object]
    runs: int
    failed: int = Field(description="runs that ran and failed or timed out")
    cancelled: int = 0
    unfinished: int = Field(0, description="runs pending or running")
    summary: dict[str, Summary] = Field(description="metric name → statistics over the trial's runs")


class Metric(_Open):
    name: str
    goal: str
    unit: str = ""


class RunSummary(_Open):
    run_id: str
    trial_id: str
    repeat: int
    warmup: bool
    status: str
    exit_code: Optional[int] = None
    reason: str = ""
    attempts: int = 0
    started_at: Optional[float] = None
    finished_at: Optional[float] = None
    duration_s: Optional[float] = None
    params: dict[str, object]
    metrics: dict[str, float]
    log_line: str = Field("", description="a failed run's last line of log (where the cause usually is)")


class CostColumn(BaseModel):
    name: str
    heading: str = Field(description="e.g. `$/run`, `$/M tokens`")


class ExperimentDetail(_Experiment):
    spec_text: str
    description: str = Field("", description="the spec's description")
    metrics: list[Metric]
    primary_metric: Optional[str] = None
    swept: list[str]
    trials: list[Trial]
    runs: list[RunSummary] = Field(description="every run, warm-up runs included (their `warmup` is true)")
    runner_log: Optional[str] = Field(None, description="end of the runner's output (experiments launched here)")
    cost: Optional[str] = Field(None, description="median cost per run and per item of the counted runs "
                                                  "(e.g. `$0.0123/run, $1.23/M tokens`); null without prices")
    cost_columns: list[CostColumn] = Field([], description="cost metrics whose trial medians the trials table shows")
    labels: dict[str, str] = Field({}, description="run-time labels (`kubebench run --label version=1.4`)")
    note: str = ""
    tags: list[str] = []
    source: str = Field("", description="the spec file it was run from")
    resume: Optional[str] = Field(None, description="the command that resumes it, when it is interrupted")
    runner: Optional[str] = Field(None, description="`gone` when the store says it runs but no runner holds its "
                                                    "lock (killed): shown as interrupted; it can be cancelled and deleted")
    parallelism: int = Field(1, description="runs the spec lets run at once")


class RunDetail(RunSummary):
    experiment_id: str
    log_tail: str
    provenance: dict[str, object]
    path: str
    logs: list[str] = Field(description="replica log names, e.g. master-0")
    telemetry: list[str] = Field(description="names of the run's telemetry series")
    info: dict[str, str] = Field({}, description="what the run found out about itself: drifting, energy_unavailable …")
    metric_list: list[dict] = Field([], description="the metrics in display order: declared (with units), "
                                                    "the workload's others, telemetry")
    step_times: bool = Field(False, description="whether the run wrote output/step_times.json")


class Telemetry(BaseModel):
    series: dict[str, list[tuple[float, float]]]


class FileEntry(BaseModel):
    name: str
    path: str
    is_dir: bool
    size: int


class Folder(BaseModel):
    path: str
    entries: list[FileEntry]


class Launched(BaseModel):
    id: str
    url: str


class Cancelled(BaseModel):
    id: str
    cancelled: bool


class ComparisonRow(_Open):
    params: dict[str, object]
    a: dict[str, object]
    b: dict[str, object]
    ratio: Optional[float] = None
    ci_low: Optional[float] = Field(None, description="the ratio's CI (its level: the comparison's confidence)")
    ci_high: Optional[float] = None
    p_value: Optional[float] = Field(None, description="one-sided p-value in the direction the candidate moved")
    adjusted_p: Optional[float] = Field(None, description="the verdict's p adjusted over the trials (Holm)")
    verdict: str
    reason: str = ""


class Comparison(_Open):
    a: str
    b: str
    metric: str
    unit: str = ""
    goal: str
    threshold: float = Field(description="relative change below which a difference counts as noise")
    confidence: float = Field(0.9, description="the level of each row's CI of the ratio (1 − 2α: its ends are the "
                                               "one-sided bounds the verdict is read from)")
    rows: list[ComparisonRow]
    warnings: list[str]
    correction: str = Field("", description="how significance was adjusted over several trials")
    cost: Optional[str] = Field(None, description="median cost per run of both, when both carry one")


class ServingView(BaseModel):
    """A serving experiment's capacity answer (``search:``) and its plots as Plotly figures."""

    question: str
    capacity: list[dict]
    figures: list[dict]
