"""The folders of a run on shared storage, and the ``KUBEBENCH_*`` environment that points at them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath


@dataclass(frozen=True)
class RunPaths:
    """A run's folders as the job sees them (a local folder, or a volume mounted in a pod)."""

    experiments_root: PurePath
    data_root: PurePath
    experiment_id: str
    run_id: str

    @property
    def experiment(self) -> PurePath:
        """The experiment's folder."""
        return self.experiments_root / self.experiment_id

    @property
    def run(self) -> PurePath:
        """This run's folder: ``KUBEBENCH_EXP_PATH``."""
        return self.experiment / self.run_id

    @property
    def config(self) -> PurePath:
        """The rendered job and the parameters as run."""
        return self.run / "config"

    @property
    def output(self) -> PurePath:
        """Where replicas write logs and raw outputs."""
        return self.run / "output"

    @property
    def result(self) -> PurePath:
        """Where a job or post-processor writes ``result.json``."""
        return self.run / "result"

    def env(self, trial_id: str, repeat: int) -> dict[str, str]:
        """The environment of every replica: the original Kubebench names plus run/trial/repeat."""
        return {
            "KUBEBENCH_EXP_ID": self.experiment_id,
            "KUBEBENCH_EXP_ROOT": str(self.experiments_root),
            "KUBEBENCH_EXP_PATH": str(self.run),
            "KUBEBENCH_EXP_CONFIG_PATH": str(self.config),
            "KUBEBENCH_EXP_OUTPUT_PATH": str(self.output),
            "KUBEBENCH_EXP_RESULT_PATH": str(self.result),
            "KUBEBENCH_CONFIG_ROOT": str(self.config),
            "KUBEBENCH_DATA_ROOT": str(self.data_root),
            "KUBEBENCH_RUN_ID": self.run_id,
            "KUBEBENCH_TRIAL_ID": trial_id,
            "KUBEBENCH_REPEAT": str(repeat),
        }
