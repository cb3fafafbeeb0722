"""Experiments started from the dashboard: each one a ``kubebench run`` subprocess of this server.

The spec (and parameter file, and a form's template) is validated here first, so that a bad one is
answered at once with located errors and nothing starts; then it is saved under
``<home>/launched/<id>/`` and run by ``python -m kubebench run <spec> --id <id>`` with this server's
home, store and storage. Cancelling sends SIGINT (the runner then cancels the run in flight and
records it cancelled); the runs it never started are recorded cancelled here once it has exited.
A reaper thread per process waits for it, so no zombie is left; stopping the app stops them all.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KubebenchError, LaunchError, SpecError
from ..redact import runner_environment
from ..settings import Settings
from ..store.records import RunResult
from ..store.store import Store

#: Seconds a runner gets to cancel its run in flight after SIGINT before it is killed (app stop).
STOP_GRACE_S = 15.0


@dataclass
class Launched:
    """One experiment this server started."""

    id: str
    folder: Path
    process: subprocess.Popen
    started_at: float
    cancelled: bool = False
    returncode: int | None = None
    finished: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Files:
    """The texts of a launch: spec, optional parameter file and template."""

    spec: str
    params: str | None = None
    template: tuple[str, str] | None = None  # (file name, text)


class Launcher:
    """Starts, tracks, cancels and reaps the ``kubebench run`` subprocesses of this server."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings, self.store = settings, store
        self.root = settings.home / "launched"
        self._jobs: dict[str, Launched] = {}
        self._lock = threading.Lock()

    # -- queries -------------------------------------------------------------------------------
    def active_ids(self) -> list[str]:
        """Experiments whose runner is still alive."""
        with self._lock:
            return [j.id for j in self._jobs.values() if not j.finished.is_set()]

    def is_active(self, experiment_id: str) -> bool:
        job = self._jobs.get(experiment_id)
        return job is not None and not job.finished.is_set()

    def launched_here(self, experiment_id: str) -> bool:
        return experiment_id in self._jobs

    def job(self, experiment_id: str) -> Launched | None:
        return self._jobs.get(experiment_id)

    # -- launch --------------------------------------------------------------------------------
    def launch(self, files: Files) -> str:
        """Validate, save and start an experiment; return its id. LaunchError/SpecError: nothing started."""
        staging = self.root / f".staging-{secrets.token_hex(8)}"
        staging.mkdir(parents=True)
        try:
            exp_id = self._validate(staging, files)
            folder = self.root / exp_id
            staging.rename(folder)
        except KubebenchError as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise _located(e, staging, files) from e
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self._record(exp_id, folder, params=files.params is not None)
        self._start(exp_id, folder, params=files.params is not None)
        return exp_id

    def _record(self, exp_id: str, folder: Path, params: bool) -> None:
        """Store the experiment (runs pending) before its runner starts: it is listed and shown at once."""
        from ..runner import plan_experiment, record_experiment
        from ..spec.load import load_spec

        loaded = load_spec(folder / "spec.yaml", params_file=folder / "params.yaml" if params else None)
        record_experiment(plan_experiment(loaded, self.settings, exp_id), self.store)

    def _validate(self, staging: Path, files: Files):
        from ..runner import make_backend, plan_experiment, validate
        from ..spec.load import load_spec

        spec_path = staging / "spec.yaml"
        spec_path.write_text(files.spec, encoding="utf-8")
        params_path = None
        if files.params is not None:
            params_path = staging / "params.yaml"
            params_path.write_text(files.params, encoding="utf-8")
        if files.template is not None:
            (staging / files.template[0]).write_text(files.template[1], encoding="utf-8")
        loaded = load_spec(spec_path, params_file=params_path)
        exp_id = self._new_id(loaded.spec.name)
        experiment = plan_experiment(loaded, self.settings, exp_id)
        backend = make_backend(loaded)
        try:
            validate(experiment, backend)  # renders every trial: template errors stop the launch here
        finally:
            backend.close()
        return exp_id

    def _new_id(self, name: str) -> str:
        from ..errors import NotFoundError
        from ..plan.plan import new_experiment_id

        while True:
            exp_id = new_experiment_id(name)
            if (self.root / exp_id).exists():
                continue
            try:
                self.store.experiment(exp_id)
            except NotFoundError:
                return exp_id

    def _start(self, exp_id: str, folder: Path, params: bool) -> None:
        command = [sys.executable, "-m", "kubebench", "run", str(folder / "spec.yaml"), "--id", exp_id]
        if params:
            command += ["--params", str(folder / "params.yaml")]
        # the runner needs the store (its jobs do not get it: see kubebench.redact), never the token
        env = {**runner_environment(os.environ), "KUBEBENCH_HOME": str(self.settings.home),
               "KUBEBENCH_STORE": self.settings.store_url,
               "COLUMNS": "120"}
        env.pop("KUBEBENCH_STORAGE", None)
        if self.settings.storage_url:
            env["KUBEBENCH_STORAGE"] = self.settings.storage_url
        with open(folder / "runner.log", "wb") as log:
            # a session of its own: a Ctrl-C at the server's terminal does not reach it; we stop it
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       cwd=folder, env=env, start_new_session=True)
        job = Launched(exp_id, folder, process, time.time())
        with self._lock:
            self._jobs[exp_id] = job
        threading.Thread(target=self._reap, args=(job,), name=f"reap-{exp_id}", daemon=True).start()

    def _reap(self, job: Launched) -> None:
        job.returncode = job.process.wait()
        if job.cancelled:  # what the runner did not record: cancelled too
            self._record_leftovers(job.id, ("pending", "running"), "cancelled", "cancelled from the dashboard")
        else:  # a runner that died (killed, crashed) leaves its run in flight "running" for ever
            self._record_leftovers(job.id, ("running",), "failed", f"the runner stopped (exit code "
                                   f"{job.returncode}) before the run ended; see launched/{job.id}/runner.log")
        job.finished.set()

    def _record_leftovers(self, exp_id: str, statuses: tuple[str, ...], status: str, reason: str) -> None:
        try:
            left = [r for r in self.store.runs(exp_id, include_warmup=True) if r.status in statuses]
            now = time.time()
            self.store.finish_runs([RunResult(run_id=r.run_id, status=status, finished_at=now, reason=reason)
                                    for r in left])
        except KubebenchError:
            pass  # the experiment never reached the store (stopped at once): nothing to record

    # -- cancel and stop -----------------------------------------------------------------------
    def cancel(self, exp_id: str) -> bool:
        """Ask the runner to stop (SIGINT); False when this server is not running that experiment."""
        job = self._jobs.get(exp_id)
        if job is None or job.finished.is_set():
            return False
        job.cancelled = True
        try:
            job.process.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass  # it just ended; the reaper records it
        return True

    def wait(self, exp_id: str, timeout: float | None = None) -> bool:
        """Wait for a runner to end (and be reaped); True if it has."""
        job = self._jobs.get(exp_id)
        return job is None or job.finished.wait(timeout)

    def shutdown(self, grace: float = STOP_GRACE_S) -> None:
        """Cancel every runner still alive, and kill those that do not stop within ``grace`` seconds."""
        alive = [j for j in list(self._jobs.values()) if not j.finished.is_set()]
        for job in alive:
            self.cancel(job.id)
        deadline = time.monotonic() + grace
        for job in alive:
            if not job.finished.wait(max(0.0, deadline - time.monotonic())):
                try:
                    os.killpg(job.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                job.finished.wait(5)



def _located(error: KubebenchError, staging: Path, files: Files) -> LaunchError:
    """A LaunchError whose problems name spec/params/template lines instead of server paths."""
    from .forms import Problem, spec_problems

    text = str(error)
    for folder in {str(staging), str(staging.resolve())}:
        text = text.replace(folder + os.sep, "")
    names = {"spec.yaml": "spec", "params.yaml": "params"}
    if files.template is not None:
        names[files.template[0]] = "template"
    if isinstance(error, SpecError):
        problems = spec_problems(text, names, files.spec)
    else:  # a backend or storage that cannot be used: not located in the spec
        problems = [Problem(loc="spec", message=text)]
    return LaunchError(text, problems)
