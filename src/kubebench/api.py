"""kubebench's Python API: what a script needs to load a benchmark, run it, read its results and
compare two experiments. These names are promised (``__all__``, pinned by a test); every other module
of the package is internal and may change.

    import kubebench.api as kb

    loaded = kb.load("examples/pytorch-cnn/benchmark.yaml", overrides=["batch_size=[32]"])
    experiment = kb.run(loaded, repeats=2, home="kubebench-data")
    store = kb.open_store(home="kubebench-data")
    for trial in kb.results(store, experiment.id):
        print(trial.params, trial.runs_by_status)

A workload reports its numbers with :func:`kubebench.report` and marks moments with
:func:`kubebench.mark` (both in the package root, which imports nothing heavy).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__, mark, report
from .analyse.experiments import TrialComparison, compare_experiments
from .errors import KubebenchError, SpecError
from .rules import COMPARE_THRESHOLD
from .settings import Settings, settings
from .spec.load import load_spec
from .spec.model import LoadedSpec
from .store.records import ExperimentRecord, RunRecord, TrialResults

if TYPE_CHECKING:
    from .store.store import Store

__all__ = [
    "ExperimentRecord", "KubebenchError", "LoadedSpec", "RunRecord", "Settings", "SpecError", "TrialComparison",
    "TrialResults", "__version__", "compare", "load", "mark", "open_store", "report", "results", "run",
]


def load(spec: str | Path, params: str | Path | None = None, overrides: Sequence[str] = ()) -> LoadedSpec:
    """Load and validate a benchmark spec, with a parameter file and ``key=value`` overrides (as ``--set``)."""
    return load_spec(spec, params_file=params, overrides=tuple(overrides))


def run(spec: LoadedSpec | str | Path, *, experiment_id: str | None = None, repeats: int | None = None,
        labels: dict[str, str] | None = None, home: str | Path | None = None, store: str | None = None,
        storage: str | None = None) -> ExperimentRecord:
    """Plan, run and record a benchmark as ``kubebench run`` does (without its output), and return the
    experiment as stored. Running it again with the same ``experiment_id`` resumes it. A failed run is
    recorded, not raised: read the runs' statuses from :func:`results`."""
    from .runner import execute, plan_experiment

    loaded = spec if isinstance(spec, LoadedSpec) else load(spec)
    config = settings(store, home=home, storage=storage)
    experiment = plan_experiment(loaded, config, experiment_id, repeats, labels)
    db = open_store(config.store_url)
    execute(experiment, db)
    return db.experiment(experiment.plan.experiment_id)


def open_store(url: str | None = None, *, home: str | Path | None = None) -> Store:
    """The results store at ``url`` (``sqlite:///…``, ``postgresql+psycopg://…``), else the one of ``home``
    (default: ``KUBEBENCH_STORE``, else ``./kubebench-data``)."""
    from .store.store import open_store as open_url

    return open_url(url or settings(home=home).store_url)


def results(store: Store, experiment_id: str) -> list[TrialResults]:
    """Each trial of an experiment: its parameters, its counted runs by status and their metrics."""
    return store.trial_results(experiment_id)


def compare(store: Store, base: str, candidate: str, metric: str | None = None, *,
            threshold: float = COMPARE_THRESHOLD) -> list[TrialComparison]:
    """Two experiments compared trial by trial on ``metric`` (default: the base's primary metric), as
    ``kubebench compare`` does: each row has the ratio of medians with its CI, p and the verdict."""
    name, goal = store.experiment(base).metric_goal(metric)
    return compare_experiments(store.runs(base), store.runs(candidate), name, goal, threshold)
