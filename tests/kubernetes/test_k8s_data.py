"""The data step on Kubernetes (API emulator + stand-ins): a prepare step runs as a batch Job on the
data volume, before the first run, with its log kept beside the dataset and its time recorded apart;
the next experiment finds the data ready and creates no Job for it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.cluster.cluster import Cluster
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.data.cache import DataCache
from kubebench.settings import settings
from kubebench.store.store import open_store

MAKE = """
import os
from pathlib import Path
out = Path(os.environ["KUBEBENCH_DATA_PATH"])
for i in range(int(os.environ["COUNT"])):
    (out / f"{i}.txt").write_text(str(i))
print("made", os.environ["COUNT"], "files in", out, "for", os.environ["KUBEBENCH_EXP_ID"], flush=True)
"""

SPEC = """
name: k8s-data
job:
  kind: Job
  image: kubebench-torch:0.1.0
  command: [python, -c, "import os, kubebench; kubebench.report(files=len(os.listdir(os.environ['KUBEBENCH_DATA_ROOT'] + '/made-{{ n }}')))"]
parameters:
  n: [3]
  w: [0, 1]
metrics: [{name: files}]
data:
  prepare:
    - {name: "made-{{ n }}", command: [python, make.py], env: {COUNT: "{{ n }}"}, image: maker:1, timeout: 2m}
backend: {kind: kubernetes}
"""


def invoke(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args))


@pytest.mark.slow
def test_the_prepare_step_is_a_job_on_the_claim_before_the_runs(cluster: Cluster, tmp_path: Path) -> None:
    (tmp_path / "make.py").write_text(MAKE)
    spec = tmp_path / "benchmark.yaml"
    spec.write_text(SPEC.lstrip())
    result = invoke("run", str(spec), "--id", "k8s-data")
    assert result.exit_code == 0, result.output
    db = open_store(settings().store_url)
    runs = db.runs("k8s-data")
    assert [r.metrics["files"] for r in runs] == [3.0, 3.0]
    [data] = db.data("k8s-data")
    cache = DataCache(cluster.home / "data")
    marker = cache.marker("made-3")
    assert marker is not None and (marker.files, data.files, data.prepared) == (3, 3, True)
    # the prepare step's Job: created first, the data written through the claim, its log kept
    jobs = [(r.method, r.path.rsplit("/", 1)[-1]) for r in cluster.api.requests
            if r.method in ("POST", "DELETE") and "/batch/v1/" in r.path]
    step = f"kb-data-{data.key[:12]}"
    assert jobs[:2] == [("POST", "jobs"), ("DELETE", step)]  # made and gone before the first run's job
    assert sorted(jobs[2:]) == sorted([("POST", "jobs")] * 2 + [("DELETE", f"kb-{r.run_id}") for r in runs])
    folder = cluster.home / "experiments" / "k8s-data" / f"data-{data.key[:12]}"
    manifest = yaml.safe_load((folder / "config" / "manifest.yaml").read_text())
    [container] = manifest["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert (manifest["kind"], container["image"], env["KUBEBENCH_DATA_PATH"]) == ("Job", "maker:1", "/kubebench/data/made-3")
    assert {"name": "kubebench-storage", "mountPath": "/kubebench/data/made-3", "subPath": "data/made-3"} \
        in container["volumeMounts"]  # the dataset's folder only, on the claim the runs mount
    # (the stand-in's kubelet runs it with the claim's paths as this machine sees them)
    assert (folder / "output" / "worker-0.log").read_text() == f"made 3 files in {cache.folder('made-3')} for k8s-data\n"
    assert min(r.started_at or 0 for r in runs) >= marker.prepared_at  # before the first run, apart from it
    assert db.experiment("k8s-data").data_prepare_seconds >= data.seconds > 0

    again = invoke("run", str(spec), "--id", "k8s-again")
    assert again.exit_code == 0, again.output
    assert [d.prepared for d in db.data("k8s-again")] == [False]
    assert cluster.api.count("POST", "/batch/v1/") == 3 + 2  # its runs: no Job for the data, ready


DOCTOR = """
name: k8s-data-doctor
job: {kind: Job, image: runner:1, command: [python, -c, "pass"]}
data:
  prepare:
    - {name: made, command: [python, make.py], image: maker:1}
    - {name: more, command: [python, make.py, --more], image: maker:1}
backend: {kind: kubernetes}
"""


def test_doctor_checks_that_a_prepare_job_writes_where_the_runs_read(cluster: Cluster, tmp_path: Path) -> None:
    cluster.api.store.update(("", "v1", "persistentvolumeclaims"), cluster.namespace, "kubebench",
                             lambda o: {**o, "status": {"phase": "Bound"}}, status=True)
    spec = tmp_path / "benchmark.yaml"
    spec.write_text(DOCTOR.lstrip())
    result = invoke("doctor", str(spec))
    assert result.exit_code == 0, result.output
    assert f"ok   data prepare job (maker:1): a probe job wrote into the data root the runs read ({cluster.home / 'data'})" \
        in result.output
    assert result.output.count("data prepare job") == 1  # one probe per image
    assert sorted(p.name for p in (cluster.home / "data").iterdir()) == [".kubebench"]  # the probe left nothing
    assert not (cluster.home / "experiments" / "doctor").exists()

    cluster.operator.local_root = tmp_path / "the-claim"  # the pods' claim is not where kubebench looks
    cluster.operator.local_root.mkdir()
    result = invoke("doctor", str(spec))
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "FAIL data prepare job (maker:1): a probe job wrote into its data folder, but kubebench does not see it" in out
    [token] = (cluster.operator.local_root / "data").glob("probe-*/token")  # it wrote where the pods' claim is
    assert len(token.read_text().strip()) == 12


def test_doctor_warns_that_a_claim_of_one_node_keeps_prepare_job_and_runs_on_it(cluster: Cluster, tmp_path: Path) -> None:
    claims = ("", "v1", "persistentvolumeclaims")
    cluster.api.store.update(claims, cluster.namespace, "kubebench",
                             lambda o: {**o, "spec": {**o["spec"], "accessModes": ["ReadWriteOnce"]}})
    cluster.api.store.update(claims, cluster.namespace, "kubebench", lambda o: {**o, "status": {"phase": "Bound"}},
                             status=True)
    spec = tmp_path / "benchmark.yaml"
    spec.write_text(DOCTOR.lstrip())
    out = " ".join(invoke("doctor", str(spec)).output.split())
    assert ("warn claim: kubebench is ReadWriteOnce: pods on other nodes cannot mount it (a job's replicas, or runs "
            "reading what a data prepare Job wrote): all must run on one node") in out
