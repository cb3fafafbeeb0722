"""The data step of ``kubebench run`` on the local backend: datasets prepared before the first run,
once per key, reused by the next experiment, recorded with the runs and shown; every fault one
error naming the dataset, with nothing marked ready and nothing stored lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from data_support import sha256, tar_of
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.data.cache import DataCache
from kubebench.settings import settings
from kubebench.store.store import open_store

runner = CliRunner(env={"COLUMNS": "220"})

#: Writes N files into $KUBEBENCH_DATA_PATH and a line into prepared.log (how many times it ran);
#: fails while a file ``fail-<n>`` is in the spec's folder (removing one per try), sleeps while ``hold`` is.
MAKE = """
import os, sys, time
from pathlib import Path
n = int(sys.argv[1])
Path("prepared.log").open("a").write(os.environ["KUBEBENCH_DATA_PATH"] + "\\n")
fails = sorted(Path(".").glob("fail-*"))
if fails:
    fails[0].unlink()
    print("making", n, "files: failing on purpose", flush=True)
    sys.exit(3)
while Path("hold").exists():
    time.sleep(0.05)
for i in range(n):
    (Path(os.environ["KUBEBENCH_DATA_PATH"]) / f"f{i}.txt").write_text(str(i) * (i + 1))
print("made", n, "files", flush=True)
"""

SPEC = """
name: data-bench
job:
  kind: Process
  command: [python, -c, "import os, kubebench; d = os.environ['KUBEBENCH_DATA_ROOT'] + '/files-{{ n }}'; kubebench.report(files=len(os.listdir(d)), w={{ w }})"]
parameters:
  n: [2, 3]
  w: [0, 1]
metrics:
  - {name: files, primary: true}
data:
  prepare:
    - {name: "files-{{ n }}", command: [python, make.py, "{{ n }}"], timeout: 30s, retries: RETRIES}
"""


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def bench(home: Path, write) -> Path:
    write("make.py", MAKE)
    return write("spec.yaml", SPEC.replace("RETRIES", "0"))


def prepared(spec: Path) -> list[str]:
    log = spec.parent / "prepared.log"
    return log.read_text().splitlines() if log.exists() else []


def test_datasets_are_prepared_once_before_the_runs_and_reused(bench: Path, home: Path) -> None:
    first = invoke("run", str(bench), "--id", "first")
    assert first.exit_code == 0, first.output
    db = open_store(settings().store_url)
    runs = db.runs("first")
    assert sorted((r.params["n"], r.metrics["files"]) for r in runs) == [(2, 2.0), (2, 2.0), (3, 3.0), (3, 3.0)]
    cache = DataCache(home / "data")
    assert prepared(bench) == [str(cache.folder("files-2")), str(cache.folder("files-3"))]  # once per key
    markers = {n: cache.marker(f"files-{n}") for n in (2, 3)}
    assert all(m is not None and m.source == "prepare" for m in markers.values())
    # every run started once its data was ready: the data's time is not in any run's
    assert min(r.started_at or 0 for r in runs) >= max(m.prepared_at for m in markers.values() if m)
    recorded = {d.name: d for d in db.data("first")}
    assert set(recorded) == {"files-2", "files-3"} and all(d.prepared for d in recorded.values())
    assert recorded["files-3"].checksum == markers[3].checksum and recorded["files-3"].files == 3  # type: ignore[union-attr]
    assert {frozenset(d.trials) for d in recorded.values()} == {frozenset(r.trial_id for r in runs if r.params["n"] == n)
                                                                for n in (2, 3)}
    total = db.experiment("first").data_prepare_seconds
    assert total is not None and total >= sum(d.seconds for d in recorded.values()) > 0

    second = invoke("run", str(bench), "--id", "second")
    assert second.exit_code == 0, second.output
    assert len(prepared(bench)) == 2  # reused: the step did not run again
    again = {d.name: d for d in db.data("second")}
    assert [d.prepared for d in again.values()] == [False, False]
    assert {d.key for d in again.values()} == {d.key for d in recorded.values()}

    shown = invoke("show", "second").output
    assert "data: 2 datasets" in shown and "files-3: 3 files" in shown and "cached" in shown
    assert f"key {recorded['files-2'].key}" in shown
    listed = json.loads(invoke("data", "ls", "-f", "json").output)
    assert [(e["name"], e["ready"], e["files"], e["experiments"]) for e in listed] == [
        ("files-2", True, 2, ["first", "second"]), ("files-3", True, 3, ["first", "second"])]
    assert "files-3  ready" in invoke("data", "ls").output


def test_a_changed_input_prepares_again_and_compare_warns(bench: Path, home: Path) -> None:
    assert invoke("run", str(bench), "--id", "before", "--set", "n=2").exit_code == 0
    (bench.parent / "make.py").write_text(MAKE.replace("str(i) * (i + 1)", "str(i) * (i + 2)"))
    result = invoke("run", str(bench), "--id", "after", "--set", "n=2")
    assert result.exit_code == 0, result.output
    assert len(prepared(bench)) == 2  # the script changed: its key did, and the data was made again
    db = open_store(settings().store_url)
    [before], [after] = db.data("before"), db.data("after")
    assert before.key != after.key and before.checksum != after.checksum and after.prepared
    assert DataCache(home / "data").marker("files-2").key == after.key  # type: ignore[union-attr]
    compared = runner.invoke(app, ["compare", "before", "after"])
    assert compared.exit_code == 0, compared.output
    assert "warning: data differ: dataset files-2: tree-sha256:" in compared.stderr
    listed = json.loads(invoke("data", "ls", "-f", "json").output)
    assert listed[0]["experiments"] == ["after"]  # the key the folder holds now


def test_a_failing_prepare_step_stops_the_experiment_naming_the_dataset(bench: Path, home: Path) -> None:
    (bench.parent / "fail-1").write_text("")
    result = runner.invoke(app, ["run", str(bench), "--id", "broken", "--set", "n=2"])
    assert result.exit_code == 1
    log = home / "experiments" / "broken"
    assert result.stderr.startswith("error: dataset files-2: its prepare step failed: worker-0 exited with code 3")
    assert "making 2 files: failing on purpose" in result.stderr and str(log) in result.stderr
    cache = DataCache(home / "data")
    assert cache.marker("files-2") is None and not cache.folder("files-2").exists()  # nothing half-made kept
    db = open_store(settings().store_url)
    assert {r.status for r in db.runs("broken")} == {"pending"} and db.data("broken") == []
    resumed = invoke("run", str(bench), "--id", "broken", "--set", "n=2")  # the cause gone, it resumes
    assert resumed.exit_code == 0, resumed.output
    assert {r.status for r in db.runs("broken")} == {"succeeded"} and [d.name for d in db.data("broken")] == ["files-2"]


def test_a_step_is_retried_then_times_out(home: Path, write) -> None:
    write("make.py", MAKE)
    spec = write("spec.yaml", SPEC.replace("RETRIES", "1"))
    (spec.parent / "fail-1").write_text("")
    result = runner.invoke(app, ["run", str(spec), "--id", "retried", "--set", "n=2"])
    assert result.exit_code == 0, result.output
    assert len(prepared(spec)) == 2  # failed once, then made it
    (spec.parent / "hold").write_text("")
    spec.write_text(SPEC.replace("RETRIES", "0").replace("timeout: 30s", "timeout: 1s"))
    result = runner.invoke(app, ["run", str(spec), "--id", "slow", "--set", "n=3"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: dataset files-3: its prepare step failed: timed out after 1s")
    assert DataCache(home / "data").marker("files-3") is None


def test_a_resumed_experiment_must_read_the_same_data(bench: Path) -> None:
    assert invoke("run", str(bench), "--id", "fixed", "--set", "n=2").exit_code == 0
    (bench.parent / "make.py").write_text(MAKE + "\n# changed\n")
    result = runner.invoke(app, ["run", str(bench), "--id", "fixed", "--set", "n=2"])
    assert result.exit_code == 2
    assert "experiment 'fixed' was started with other data for dataset 'files-2'" in result.stderr
    assert len(prepared(bench)) == 1  # refused before anything was prepared


FETCH = """
name: fetched
job:
  kind: Process
  command: [python, -c, "import os, kubebench; kubebench.report(size=os.path.getsize(os.environ['KUBEBENCH_DATA_ROOT'] + '/digits/d/x.bin'))"]
metrics: [{name: size}]
data:
  datasets:
    - {name: digits, url: "URL", sha256: "SHA", retries: 0}
"""


def test_a_fetched_dataset_in_show_and_the_report(home: Path, write, files, tmp_path: Path) -> None:
    archive = tar_of({"d/x.bin": b"x" * 1000})
    files.files["/digits.tar.gz"] = archive
    spec = write("spec.yaml", FETCH.replace("URL", files.url("/digits.tar.gz")).replace("SHA", sha256(archive)))
    result = invoke("run", str(spec), "--id", "got")
    assert result.exit_code == 0, result.output
    db = open_store(settings().store_url)
    assert [r.metrics["size"] for r in db.runs("got")] == [1000.0]
    [d] = db.data("got")
    assert (d.source, d.checksum, d.files, d.bytes) == ("url", f"sha256:{sha256(archive)}", 1, 1000)
    report = tmp_path / "r.html"
    assert invoke("report", "got", "-o", str(report)).exit_code == 0
    text = report.read_text()
    assert "<td>digits</td>" in text and f"sha256:{sha256(archive)[:12]}" in text and "before the runs" in text

    wrong = write("wrong.yaml", FETCH.replace("URL", files.url("/digits.tar.gz")).replace("SHA", "0" * 64)
                  .replace("name: digits", "name: other"))
    failed = runner.invoke(app, ["run", str(wrong), "--id", "wrong"])
    assert failed.exit_code == 1 and failed.stderr.startswith("error: dataset other: checksum mismatch")
    gone = write("gone.yaml", FETCH.replace("URL", files.url("/gone.tar")).replace("SHA", "0" * 64))
    failed = runner.invoke(app, ["run", str(gone), "--id", "gone"])
    assert failed.exit_code == 1 and failed.stderr.startswith("error: dataset digits: cannot fetch")
    assert "not found" in failed.stderr
    assert DataCache(home / "data").ready("digits", d.key) is not None  # the first one's data untouched
    assert [r.metrics["size"] for r in db.runs("got")] == [1000.0]  # and what was stored of it


def test_data_rm(bench: Path, home: Path) -> None:
    assert invoke("run", str(bench), "--id", "one", "--set", "n=2").exit_code == 0
    refused = runner.invoke(app, ["data", "rm", "files-9", "-y"])
    assert refused.exit_code == 2 and "no dataset 'files-9'" in refused.stderr
    removed = invoke("data", "rm", "files-2", "-y")
    assert removed.exit_code == 0 and "removed dataset files-2" in removed.output
    assert invoke("data", "ls").output.startswith("no datasets in")
    assert invoke("run", str(bench), "--id", "two", "--set", "n=2").exit_code == 0
    assert len(prepared(bench)) == 2  # gone from the cache: prepared again
    assert [d.prepared for d in open_store(settings().store_url).data("one")] == [True]  # the store kept its record


def test_doctor_probes_the_data_root_with_a_prepare_job(bench: Path, home: Path) -> None:
    result = runner.invoke(app, ["doctor", str(bench)])
    assert result.exit_code == 0, result.output
    assert f"ok   data prepare job (python:3.11-slim): a probe job wrote into the data root the runs read ({home / 'data'})" \
        in result.output
    assert [p.name for p in (home / "data").iterdir()] == [".kubebench"] and not (home / "experiments" / "doctor").exists()
    (bench.parent / "not-a-folder").write_text("")
    bench.write_text(bench.read_text() + "data_root: not-a-folder\n")
    result = runner.invoke(app, ["doctor", str(bench)])
    assert result.exit_code == 2, result.output
    assert "FAIL data prepare job (python:3.11-slim): a probe job of the prepare step's image could not write" in \
        " ".join(result.output.split())
