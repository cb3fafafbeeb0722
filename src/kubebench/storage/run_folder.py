"""Which folder the dashboard reads for a run: the run's own folder under the dashboard's roots,
whatever a store row says.

A row names a run's folder (``runs.path``), and a shared store is written by everyone who runs
benchmarks against it, while the dashboard shows files to anyone who can reach it. So a recorded path
is never opened as it is. A run's files are served only when its row names
``<root>/<experiment id>/<run id>``, where ``root`` is the experiments root the server was started
with or the storage it was given (``--storage`` / ``KUBEBENCH_STORAGE``), and what is then opened is
that folder of the root: the experiment's and the run's folders each opened without following a link
(a workload writes beside its run folder and could swap it for one). Any other recorded folder is
refused with 403, and the server's log says which run named which folder.
"""

from __future__ import annotations

import errno
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from .. import ids
from ..errors import PathRefused
from ..settings import Settings
from .storage import is_local, join, local_path

log = logging.getLogger("kubebench.web")

REFUSED = ("this run's recorded folder is not <root>/<experiment id>/<run id> under the dashboard's experiments "
           "root or storage (`kubebench serve --storage`): not served")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True)
class RunFolder:
    """A run's folder that the dashboard may read: ``<base>/<experiment id>/<run id>``."""

    base: str  #: a resolved local folder, or a storage URL without a trailing ``/``
    experiment_id: str
    run_id: str

    @property
    def is_local(self) -> bool:
        return is_local(self.base)

    @property
    def url(self) -> str:
        """The folder's path (local) or URL (remote storage)."""
        return join(self.base, self.experiment_id, self.run_id)

    def open(self) -> int:
        """A descriptor of the local folder: the base opened, then the experiment's and the run's
        folders below it, neither of which may be a link (403), nor missing (404)."""
        fd = os.open(self.base, _DIR)
        try:
            for name in (self.experiment_id, self.run_id):
                inner = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = inner
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
                raise PathRefused(403, f"the run's folder {self.url} is a link or not a folder: refused") from None
            raise PathRefused(404, f"the run's folder {self.url} is gone") from None
        return fd


def roots(settings: Settings) -> tuple[str, ...]:
    """The folders (resolved) and storage URL under which the dashboard serves runs' folders."""
    found = [str(settings.experiments_root.resolve())]
    storage = settings.storage_url
    if storage:
        found.append(str(local_path(storage)) if is_local(storage) else storage.rstrip("/"))
    return tuple(dict.fromkeys(found))


def run_folder(settings: Settings, run_id: str, experiment_id: str, recorded: str) -> RunFolder:
    """The folder of run ``run_id`` that may be served, given what its row records; 404 when it has
    none yet, 403 when the row names any other folder (see the module's note)."""
    if not recorded:
        raise PathRefused(404, "this run has no folder yet (it has not started)")
    if ids.is_valid(experiment_id) and ids.is_valid(run_id):
        for base in roots(settings):
            folder = RunFolder(base, experiment_id, run_id)
            if _names(recorded, folder):
                return folder
    log.warning("run %s of experiment %r: its row names the folder %r, not <root>/<experiment id>/<run id> "
                "under %s: not served", run_id, experiment_id[:80], recorded[:500], " or ".join(roots(settings)))
    raise PathRefused(403, REFUSED)


def _names(recorded: str, folder: RunFolder) -> bool:
    """Whether ``recorded`` names ``folder`` (local paths compared resolved)."""
    if folder.is_local != is_local(recorded):
        return False
    if not folder.is_local:
        return recorded.rstrip("/") == folder.url
    return local_path(recorded) == Path(folder.base) / folder.experiment_id / folder.run_id
