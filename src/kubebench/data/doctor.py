"""``kubebench doctor`` for the data step: can a prepare step's job write where the runs read?

For each image the spec's prepare steps use, a probe job of that image — rendered, mounted and run
exactly as a step is (:mod:`.steps`), through the backend's verbs — writes a token into a probe
folder of the data root, and kubebench reads it back where it sees the data root. On Kubernetes that
says the prepare Job mounts the claim the runs mount (the runs' data root is the same folder of it),
and that its user may write there; that runs on other nodes can mount the claim too is the claim's
check (ReadWriteMany, else every pod on one node). Locally it says the data root can be written.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from ..backends.base import Backend, Check
from ..errors import KubebenchError
from ..experiment import Experiment
from .plan import Step, plan_data
from .prepare import data_root
from .steps import run_step, step_paths

#: Seconds a probe job may take (an image to pull included).
PROBE_TIMEOUT_S = 180.0


def data_checks(experiment: Experiment, backend: Backend) -> list[Check]:
    """One check per image of the spec's prepare steps (none without any)."""
    steps = [i.source for i in plan_data(experiment.loaded.spec.data, experiment.plan.trials)
             if isinstance(i.source, Step)]
    images = dict.fromkeys(s.image or experiment.loaded.spec.job.image for s in steps)
    return [_probe(experiment, backend, image) for image in images]


def _probe(experiment: Experiment, backend: Backend, image: str) -> Check:
    token = uuid.uuid4().hex[:12]
    name = f"probe-{token}"
    step = Step(name=name, command=("sh", "-c", f'echo {token} > "$KUBEBENCH_DATA_PATH/token"'), image=image, env=(),
                resources=(), inputs=(), timeout=PROBE_TIMEOUT_S, retries=0)
    root = data_root(experiment)
    paths = step_paths(experiment, root, step, token)
    title = f"data prepare job ({image})"
    try:
        run_step(experiment, backend, step, paths, root / ".kubebench" / f"{name}.step.json")
        seen = (root / name / "token").read_text().strip() if (root / name / "token").is_file() else ""
    except KubebenchError as e:
        return Check(title, "fail", f"a probe job of the prepare step's image could not write into the data root: {e}")
    finally:
        for folder in (root / name, Path(paths.run)):
            shutil.rmtree(folder, ignore_errors=True)
        try:
            Path(paths.experiment).rmdir()  # the experiment's folder, when the probe made it
        except OSError:
            pass
    if seen != token:
        return Check(title, "fail", f"a probe job wrote into its data folder, but kubebench does not see it in "
                                    f"{root}: the job's data root is not the runs' (set backend.storage.local_path "
                                    "to where kubebench sees the claim)")
    return Check(title, "ok", f"a probe job wrote into the data root the runs read ({root})")
