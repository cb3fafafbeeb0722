"""A planned experiment: what the runner and each run's attempts share."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .backends.base import Backend
from .paths import RunPaths
from .plan.adaptive import Against
from .plan.plan import Plan, Run
from .render.job import RenderedJob, render_run
from .settings import Settings
from .spec.model import AdaptiveRepeats, LoadedSpec


@dataclass(frozen=True)
class Experiment:
    """A planned experiment: its spec, plan, backend and where its runs live."""

    loaded: LoadedSpec
    plan: Plan
    settings: Settings
    #: Adaptive repeats in force (``None`` for a fixed number, or when ``--repeats`` overrides).
    adaptive: AdaptiveRepeats | None = None
    #: Run-time labels of the experiment (``kubebench run --label version=1.4.2``), stored with it.
    labels: tuple[tuple[str, str], ...] = ()
    #: What each trial is decided against, round by round (``kubebench run --decide-against``).
    against: Against | None = None

    def local_paths(self, run: Run) -> RunPaths:
        """The run's folders as kubebench sees them."""
        data_root = self.loaded.spec.data_root
        data = self.loaded.base_dir / data_root if data_root else self.settings.data_root
        return RunPaths(self.settings.experiments_root, data, self.plan.experiment_id, run.id)

    def render(self, run: Run, backend: Backend[Any, Any]) -> RenderedJob:
        """The run's job, with the environment pointing at its folders as the job sees them, and
        what the backend adds to its manifest (volumes, service account …)."""
        paths = backend.job_paths(self.local_paths(run))
        job = render_run(self.loaded, run, self.plan.experiment_id, paths.env(run.trial.id, run.repeat))
        return replace(job, manifest=backend.prepare(job.manifest, paths))
