"""Where the embedded default keeps its state: one folder (``$KUBEBENCH_HOME`` or ``./kubebench-data``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    """Locations of the store, of the experiments' folders and of shared storage."""

    home: Path
    store_url: str
    #: Shared storage given by ``--storage`` / ``KUBEBENCH_STORAGE``; None: the spec's ``storage:``,
    #: else the local experiments folder (see :meth:`storage_for`).
    storage_url: str | None = None

    @property
    def experiments_root(self) -> Path:
        """Root of all experiments on (local) shared storage: ``KUBEBENCH_EXP_ROOT``."""
        return self.home / "experiments"

    @property
    def data_root(self) -> Path:
        """Default shared input data: ``KUBEBENCH_DATA_ROOT``."""
        return self.home / "data"

    def storage_for(self, spec_storage: str | None = None) -> str:
        """Where runs' folders end up: ``--storage``/``KUBEBENCH_STORAGE``, the spec's, else local."""
        return self.storage_url or spec_storage or str(self.experiments_root)


def settings(store: str | None = None, home: str | Path | None = None, storage: str | None = None) -> Settings:
    """Settings from arguments, then ``KUBEBENCH_HOME`` / ``KUBEBENCH_STORE`` / ``KUBEBENCH_STORAGE``, then defaults."""
    base = Path(home or os.environ.get("KUBEBENCH_HOME") or "kubebench-data").resolve()
    url = store or os.environ.get("KUBEBENCH_STORE") or f"sqlite:///{base / 'kubebench.db'}"
    shared = storage or os.environ.get("KUBEBENCH_STORAGE") or None
    return Settings(home=base, store_url=url, storage_url=shared)
