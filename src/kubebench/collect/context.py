"""What a post-processor is given about the run it reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..paths import RunPaths


@dataclass(frozen=True)
class RunContext:
    """A finished run, as seen from kubebench's side of shared storage."""

    experiment_id: str
    trial_id: str
    run_id: str
    repeat: int
    params: dict[str, object]
    paths: RunPaths
    workdir: Path

    @property
    def output(self) -> Path:
        """The run's ``output/`` folder."""
        return Path(self.paths.output)

    @property
    def result(self) -> Path:
        """The run's ``result/`` folder."""
        return Path(self.paths.result)

    @property
    def env(self) -> dict[str, str]:
        """The ``KUBEBENCH_*`` environment, as the job had it (a post-processor command gets it too)."""
        return self.paths.env(self.trial_id, self.repeat)
