"""A prepare step run as a job of the experiment's backend: a process of this machine locally, a
batch Job on the data volume on Kubernetes — with the same verbs as a run (submit, wait, collect,
release), so that nothing here tells backends apart.

The step's job has a folder in the experiment's, ``data-<key>/``, as a run has (its ``output/``
keeps the log), and sees the dataset's folder as ``KUBEBENCH_DATA_PATH``. On Kubernetes with
``storage.isolate`` (the default) its pod mounts that folder only, not the rest of the data root.

While the step is in flight, ``<data root>/.kubebench/<name>.step.json`` says which job it is (its
folders and manifest): a preparer killed mid-step leaves it, and whoever prepares the dataset next
stops what that job left running (the backend's ``reclaim``, as for an interrupted run) before it
empties the folder, so that no leftover writes into the new data.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ..attempts import dump_yaml, log_tail
from ..backends.base import Backend, Outcome
from ..errors import BackendError, DataError, StorageError
from ..paths import RunPaths
from ..render import kinds
from ..render.job import RenderedJob
from ..render.pods import JobShape
from .plan import Step

if TYPE_CHECKING:
    from ..experiment import Experiment

log = logging.getLogger("kubebench")
#: Lines of the step's log that its error quotes.
TAIL_LINES = 5


def step_paths(experiment: Experiment, data_root: Path, step: Step, key: str) -> RunPaths:
    """The step's folders as kubebench sees them (see the module's docstring); its "data root" is the
    dataset's folder: what its job may write."""
    return RunPaths(experiment.settings.experiments_root, data_root / step.name, experiment.plan.experiment_id,
                    step_id(key))


def step_id(key: str) -> str:
    """The id of a step's job (its folder, its labels): one per cache key."""
    return f"data-{key[:12]}"


def step_job(experiment: Experiment, backend: Backend, step: Step, paths: RunPaths) -> RenderedJob:
    """The step as a one-replica batch Job (run as a process locally), with the ``KUBEBENCH_*``
    environment pointing at its folders as the job sees them."""
    seen = backend.job_paths(paths)
    env = {k: v for k, v in seen.env("", 0).items() if k not in ("KUBEBENCH_TRIAL_ID", "KUBEBENCH_REPEAT")}
    env |= {"KUBEBENCH_DATA_ROOT": str(PurePath(seen.data_root).parent), "KUBEBENCH_DATA_PATH": str(seen.data_root),
            "KUBEBENCH_DATASET": step.name}
    shape = JobShape(kind="Job", workers=1, image=step.image or experiment.loaded.spec.job.image,
                           command=step.command, env=step.env, resources=step.resources)
    labels = {kinds.LABEL_PREFIX + "experiment": experiment.plan.experiment_id[:63],
              kinds.LABEL_PREFIX + "run": paths.run_id, kinds.LABEL_PREFIX + "dataset": step.name}
    name = f"kb-{paths.run_id}"
    manifest = kinds.build_manifest(shape, name, labels, step.timeout)
    kinds.inject(manifest, env, labels)
    return RenderedJob(paths.run_id, name, backend.prepare(manifest, seen), experiment.loaded.base_dir)


def run_step(experiment: Experiment, backend: Backend, step: Step, paths: RunPaths, state: Path) -> None:
    """Run the step until an attempt succeeds or its ``retries`` are spent (DataError then, naming
    the dataset, why, and where its log is). The dataset's folder is emptied before each attempt.
    ``state``: the step-in-flight file (see the module's docstring; :func:`reclaim` comes first)."""
    job = step_job(experiment, backend, step, paths)
    _write_state(state, job, paths)
    try:
        _attempts(backend, step, job, paths)
    finally:
        state.unlink(missing_ok=True)


def _attempts(backend: Backend, step: Step, job: RenderedJob, paths: RunPaths) -> None:
    attempts = step.retries + 1
    for attempt in range(1, attempts + 1):
        _fresh(paths, job)
        outcome = _attempt(backend, job, paths, step.timeout)
        if outcome.state == "succeeded":
            return
        log_file = Path(paths.output) / "worker-0.log"
        why = outcome.reason or outcome.state
        if attempt < attempts:
            log.warning("dataset %s: prepare step failed (%s); attempt %d of %d next", step.name, why,
                        attempt + 1, attempts)
            continue
        tail = "\n".join(log_tail(Path(paths.output), why).splitlines()[-TAIL_LINES:])
        raise DataError(f"dataset {step.name}: its prepare step failed: {why}"
                        + (f" (after {attempts} attempts)" if attempts > 1 else "")
                        + f"; its log: {log_file}" + (f"\n{tail}" if tail else ""))


class InFlight(BaseModel):
    """The step-in-flight file: the job and its folders, enough for ``Backend.reclaim``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiments_root: str
    data_root: str
    experiment_id: str
    run_id: str
    name: str
    manifest: dict[str, Any]
    workdir: str


def _write_state(state: Path, job: RenderedJob, paths: RunPaths) -> None:
    record = InFlight(experiments_root=str(paths.experiments_root), data_root=str(paths.data_root),
                      experiment_id=paths.experiment_id, run_id=paths.run_id, name=job.name, manifest=job.manifest,
                      workdir=str(job.workdir))
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(record.model_dump_json(), encoding="utf-8")
    except OSError as e:
        raise StorageError(f"cannot write {state}: {e.strerror or e}") from e


def reclaim(backend: Backend, state: Path, name: str) -> None:
    """Stop what a preparer killed mid-step left running, as its step-in-flight file names it."""
    try:
        found = InFlight.model_validate_json(state.read_bytes())
    except FileNotFoundError:
        return
    except (OSError, ValueError) as e:
        log.warning("dataset %s: ignoring its unreadable %s: %s", name, state, e)
        return
    paths = RunPaths(PurePath(found.experiments_root), PurePath(found.data_root), found.experiment_id, found.run_id)
    job = RenderedJob(found.run_id, found.name, found.manifest, Path(found.workdir))
    try:
        backend.reclaim([(job, paths)])
    except BackendError as e:  # submitting replaces a leftover job of the same name anyway
        log.warning("dataset %s: could not stop what an earlier preparation left running: %s", name, e)


def _attempt(backend: Backend, job: RenderedJob, paths: RunPaths, timeout: float) -> Outcome:
    handle = None
    try:
        handle = backend.submit(job, paths)
        outcome = backend.wait(handle, timeout)
        for warning in backend.collect(handle, paths):
            log.warning("prepare step %s: %s", job.name, warning)
        return outcome
    except BackendError as e:
        return Outcome("failed", None, str(e))
    finally:
        if handle is not None:
            try:
                backend.release(handle)
            except BackendError as e:
                log.warning("could not release the job of prepare step %s: %s", job.name, e)


def _fresh(paths: RunPaths, job: RenderedJob) -> None:
    """An empty step folder (config, output, result) with the job's manifest in ``config/``, as a run
    has, and an empty dataset folder."""
    try:
        for path in (paths.run, paths.data_root):
            if Path(path).exists():
                shutil.rmtree(path)
        for path in (paths.config, paths.output, paths.result, paths.data_root):
            Path(path).mkdir(parents=True)
        (Path(paths.config) / "manifest.yaml").write_text(dump_yaml(job.manifest), encoding="utf-8")
    except OSError as e:
        raise StorageError(f"cannot make the folders of prepare step {paths.run_id} ({paths.run}, "
                           f"{paths.data_root}): {e.strerror or e}") from e
