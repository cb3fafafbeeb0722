"""Runs' folders in shared storage (local folder, S3 on loopback): `run --storage`, `outputs`, `delete`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.storage import Storage

runner = CliRunner(env={"COLUMNS": "200"})

SPEC = """
name: stored
job:
  command: [python, -c, "import kubebench; print('log of', {{ n }}); kubebench.report(v={{ n }})"]
parameters:
  n: [1, 2]
"""


def invoke(*args: str, **kwargs):
    return runner.invoke(app, list(args), **kwargs)


def runs_of(experiment_id: str) -> list[dict]:
    result = invoke("results", experiment_id, "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_runs_end_up_in_s3_and_outputs_lists_and_prints_them(home: Path, write, s3: str) -> None:
    result = invoke("run", str(write("spec.yaml", SPEC)), "--id", "s3-exp", "--storage", f"{s3}/kb")
    assert result.exit_code == 0, result.output
    runs = runs_of("s3-exp")
    first = runs[0]
    assert first["path"] == f"{s3}/kb/s3-exp/{first['run_id']}"
    listed = invoke("outputs", first["run_id"])
    assert listed.exit_code == 0, listed.output
    names = [line.split()[-1] for line in listed.output.splitlines()]
    assert names == ["config/manifest.yaml", "config/params.yaml", "output/worker-0.log", "run.json", "timeline.json"]
    log = invoke("outputs", first["run_id"], "output/worker-0.log")
    assert log.output == f"log of {first['params']['n']}\nKUBEBENCH_METRIC v={float(first['params']['n'])!r}\n"
    record = json.loads(invoke("outputs", first["run_id"], "run.json").output)
    assert (record["status"], record["metrics"]) == ("succeeded", first["metrics"])
    assert record["provenance"]["python"] and first["provenance"] == record["provenance"]
    in_output = [line for line in listed.output.splitlines() if "output/" in line]
    assert invoke("outputs", first["run_id"], "output").output.splitlines() == in_output


def test_spec_storage_is_used_unless_the_environment_says_otherwise(home: Path, write, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    spec = write("spec.yaml", SPEC + "storage: from-spec\n")  # relative: to the spec's folder
    assert invoke("run", str(spec), "--id", "a").exit_code == 0
    run_id = runs_of("a")[0]["run_id"]
    assert (tmp_path / "from-spec" / "a" / run_id / "output" / "worker-0.log").exists()
    monkeypatch.setenv("KUBEBENCH_STORAGE", str(tmp_path / "from-env"))
    assert invoke("run", str(spec), "--id", "b").exit_code == 0
    assert runs_of("b")[0]["path"].startswith(str(tmp_path / "from-env" / "b"))
    assert not (tmp_path / "from-spec" / "b").exists()


def test_a_missing_bucket_stops_the_start_with_one_message(home: Path, write, s3: str) -> None:
    result = invoke("run", str(write("spec.yaml", SPEC)), "--id", "nb", "--storage", f"{s3}-absent/kb")
    assert result.exit_code == 2
    assert "bucket does not exist" in result.output and "Traceback" not in result.output
    assert "no experiment 'nb'" in invoke("show", "nb").output


def test_outputs_of_unknown_runs_and_files_are_clear_errors(home: Path, write) -> None:
    assert invoke("run", str(write("spec.yaml", SPEC)), "--id", "local").exit_code == 0
    run_id = runs_of("local")[0]["run_id"]
    assert "output/worker-0.log" in invoke("outputs", run_id).output  # the local default works alike
    for args, message in ((["nope"], "no run 'nope' in the store"),
                          ([run_id, "output/absent.log"], "no files at 'output/absent.log'"),
                          ([run_id, "../../kubebench.db"], "leave the run's folder")):
        result = invoke("outputs", *args)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("where", ["local", "s3"])
def test_delete_removes_rows_and_folders_after_asking(home: Path, write, request, where: str) -> None:
    root = request.getfixturevalue("s3") + "/kb" if where == "s3" else str(home / "experiments")
    storage = ["--storage", root] if where == "s3" else []
    spec = str(write("spec.yaml", SPEC))
    for exp in ("keep", "gone"):
        assert invoke("run", spec, "--id", exp, *storage).exit_code == 0
    gone_run, keep_run = runs_of("gone")[0]["run_id"], runs_of("keep")[0]["run_id"]
    refused = invoke("delete", "gone", input="n\n")
    assert refused.exit_code == 1 and "Delete experiment gone (2 runs)" in refused.output
    assert invoke("outputs", gone_run).exit_code == 0
    done = invoke("delete", "gone", input="y\n")
    assert done.exit_code == 0, done.output
    assert "deleted experiment gone: 2 runs" in done.output
    assert "no experiment 'gone'" in invoke("show", "gone").output
    assert invoke("outputs", gone_run).exit_code == 2
    assert not (home / "experiments" / "gone").exists()
    stored = {name.split("/")[0] for name, _ in Storage(root).files()}
    assert "gone" not in stored and "keep" in stored
    assert "output/worker-0.log" in invoke("outputs", keep_run).output
    assert invoke("delete", "keep", "--yes").exit_code == 0
    missing = invoke("delete", "keep", "--yes")
    assert missing.exit_code == 2 and "no experiment 'keep'" in missing.output


def test_unreachable_postgresql_is_one_clear_error(home: Path) -> None:
    from kubebench.testing.postgres import free_port

    url = f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/kb"
    result = invoke("experiments", "--store", url)
    assert result.exit_code == 2
    assert "cannot open the store" in result.output and "Traceback" not in result.output
