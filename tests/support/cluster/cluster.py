"""What the Kubernetes tests' fixtures hand to the tests (kept out of conftest.py so that tests can import it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubebench.store.store import Store

from .emulator import Emulator
from .standin import OperatorStandIn

NAMESPACE = "bench"


@dataclass
class Cluster:
    """The emulated cluster of one test."""

    api: Emulator
    operator: OperatorStandIn
    home: Path  # KUBEBENCH_HOME, which is also the claim's root as kubebench sees it
    kubeconfig: Path
    namespace: str = NAMESPACE


@dataclass
class Ran:
    """What running a spec left: the store and the experiment's runs."""

    store: Store
    experiment_id: str
    runs: list

    def by_status(self) -> dict[str, int]:
        """How many runs ended in each state."""
        counts: dict[str, int] = {}
        for run in self.runs:
            counts[run.status] = counts.get(run.status, 0) + 1
        return counts
