"""The one error tree of kubebench.

Every expected failure raises a subclass of :class:`KubebenchError`; the CLI prints its message
and exits with its ``exit_code``, without a traceback. A failed *run* is not an error: it is
recorded as data (see ``kubebench.store``).
"""

from __future__ import annotations

from typing import Any


class KubebenchError(Exception):
    """Base of every error kubebench expects and explains."""

    exit_code = 2


class SpecError(KubebenchError):
    """The benchmark spec, the parameter file or an override is invalid."""


class TemplateError(SpecError):
    """A job template failed to render."""


class TemplateLimit(TemplateError):
    """A template asked for more than a limit allows (size or time)."""


class PlanError(SpecError):
    """The parameters produce no valid plan (for example an empty sweep)."""


class NothingToCompare(SpecError):
    """``kubebench check``: the experiment is the first of its series (since its last accepted change)."""


class PathRefused(KubebenchError):
    """A path of a run's folder that is not read or served: malformed, leading out of the run, missing or
    too large. ``status`` is what the dashboard answers with (400, 403, 404, 413)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class PluginError(KubebenchError):
    """A plugin name is unknown or a plugin failed to load."""


class BackendError(KubebenchError):
    """A backend could not submit, watch or cancel a job."""

    exit_code = 1


class InfrastructureError(BackendError):
    """The place jobs run failed, not the job (an API server error, a machine out of processes):
    a run failing so is tried again when the spec sets ``retries``."""


class PrometheusError(KubebenchError):
    """The Prometheus server did not answer a query (recorded on the run as a warning)."""


class IdError(KubebenchError):
    """An experiment, trial or run id outside the id grammar (see ``kubebench.ids``)."""


class PreflightError(KubebenchError):
    """Where the jobs would run cannot run them at all (no cluster configured or reachable, an
    operator not installed, a namespace missing): one error before anything starts, not a failed run
    per job."""


class BusyError(KubebenchError):
    """Another kubebench process is running the same experiment."""


class StoreError(KubebenchError):
    """The results store is unreachable, locked, or of an unknown schema version."""


class StoreFileError(StoreError):
    """A SQLite store's shared-memory file (``-shm``) became unwritable under a running process.

    SQLite writes that file while it closes a connection, through a memory mapping: once the file is
    read-only that write kills the process with SIGBUS. So a ``kubebench`` process that meets this
    error prints it and ends at once (``ends_process``), without closing the store."""

    ends_process = True


class LeaseLost(BusyError, StoreError):
    """A runner's lease on its experiment, in a store that runners share, was taken over by another
    runner (its heartbeats stopped reaching the store for longer than the lease lasts): it stops writing."""


class StorageError(KubebenchError):
    """Shared storage (a folder, S3, GCS …) is unknown, unreachable, or refuses a read or write
    (a read-only folder, a full disk)."""


class DataError(KubebenchError):
    """A dataset could not be fetched, verified or prepared (a checksum mismatch, a URL not found or
    timing out, a prepare step failing): the experiment stops before its runs, nothing marked ready."""

    exit_code = 1


class ExportError(KubebenchError):
    """An export target (MLflow, a file format) is missing its package or refused the data."""


class ServeError(KubebenchError):
    """``kubebench serve`` cannot listen where it was told to (a port in use, an address not here)."""

    exit_code = 3


class NotFoundError(KubebenchError):
    """An experiment or run id that the store does not hold, or a file that storage does not hold."""


class PostprocessError(KubebenchError):
    """A post-processor could not turn a run's outputs into metrics (recorded on the run)."""

    exit_code = 1


class LaunchError(KubebenchError):
    """A launch from the web refused before anything started; ``problems`` locate what is wrong."""

    # web.forms.Problem each: a ground module cannot name the web's model
    def __init__(self, message: str, problems: list[Any]) -> None:
        super().__init__(message)
        self.problems = problems


class Cancelled(KeyboardInterrupt):
    """The runs were asked to stop (Ctrl-C or SIGTERM through ``kubebench.cancel``, or
    ``Cancel.request()``): the jobs in flight are cancelled, and no other run starts.

    Not an :class:`Exception`, so that no ``except Exception`` of a run swallows it; a
    ``KeyboardInterrupt``, so that code that stops cleanly on Ctrl-C stops so on a cancel too.
    """
