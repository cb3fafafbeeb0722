"""Where the embedded default keeps its state: one folder (``$KUBEBENCH_HOME`` or ``./kubebench-data``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    """Locations of the store and of the experiments' folders."""

    home: Path
    store_url: str

    @property
    def experiments_root(self) -> Path:
        """Root of all experiments on (local) shared storage: ``KUBEBENCH_EXP_ROOT``."""
        return self.home / "experiments"

    @property
    def data_root(self) -> Path:
        """Default shared input data: ``KUBEBENCH_DATA_ROOT``."""
        return self.home / "data"


def settings(store: str | None = None, home: str | Path | None = None) -> Settings:
    """Settings from arguments, then ``KUBEBENCH_HOME`` / ``KUBEBENCH_STORE``, then defaults."""
    base = Path(home or os.environ.get("KUBEBENCH_HOME") or "kubebench-data").resolve()
    url = store or os.environ.get("KUBEBENCH_STORE") or f"sqlite:///{base / 'kubebench.db'}"
    return Settings(home=base, store_url=url)
