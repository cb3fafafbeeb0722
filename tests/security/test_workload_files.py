"""What a workload leaves in its run folder cannot stop the runner: a FIFO (or a folder) where the
runner reads a log, ``result.json``, ``step_times.json`` or a post-processor's file is no file; before,
opening a FIFO waited for a writer forever, the run stayed ``running`` and the lock stayed held."""

from __future__ import annotations

from pathlib import Path

import yaml
from limits_support import run_cli
from support.runs import workload_metrics

from kubebench.store.store import open_store

# Each trial leaves one kind of non-file where the runner reads, then reports x=1 (to its log, or,
# in trial `log`, to a log it replaced by a FIFO) and writes r.txt for the regex post-processor.
JOB = r"""
import os, sys
out, res, case = os.environ["KUBEBENCH_EXP_OUTPUT_PATH"], os.environ["KUBEBENCH_EXP_RESULT_PATH"], sys.argv[1]
print("KUBEBENCH_METRIC x=1", flush=True)
if case != "regex":
    open(os.path.join(out, "r.txt"), "w").write("y=2\n")
if case == "extra":
    os.mkfifo(os.path.join(out, "extra-0.log"))
    os.mkdir(os.path.join(out, "folder-0.log"))
elif case == "log":
    os.unlink(os.path.join(out, "worker-0.log"))
    os.mkfifo(os.path.join(out, "worker-0.log"))
    sys.exit(3)
elif case == "result":
    os.mkfifo(os.path.join(res, "result.json"))
elif case == "steps":
    os.mkfifo(os.path.join(out, "step_times.json"))
elif case == "regex":
    os.mkfifo(os.path.join(out, "r.txt"))
"""


def test_fifos_and_folders_a_workload_leaves_never_hang_the_runner(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(JOB, encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({
        "name": "fifos", "telemetry": {"enabled": False}, "metrics": [{"name": "x"}],
        "job": {"command": ["python", str(tmp_path / "job.py"), "{{ case }}"]},
        "parameters": {"case": ["extra", "log", "result", "steps", "regex"]},
        "postprocess": [{"kind": "regex", "file": "r.txt", "pattern": r"y=(?P<y>\d+)"}],
    }), encoding="utf-8")
    home = tmp_path / "home"
    # on code that opens a FIFO, the runner never ends: the timeout fails the test
    done = run_cli("run", "spec.yaml", "--id", "fifos", cwd=tmp_path, timeout=90,
                   env={"KUBEBENCH_HOME": str(home)})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    runs = {r.params["case"]: r for r in open_store(f"sqlite:///{home / 'kubebench.db'}").runs("fifos")}
    extra = runs.pop("extra")  # a FIFO and a folder named like logs are no logs
    assert (extra.status, workload_metrics(extra.metrics)) == ("succeeded", {"x": 1.0, "y": 2.0}), extra.reason
    assert (runs["log"].status, runs["log"].exit_code, runs["log"].log_tail) == ("failed", 3, "")
    expected = {"result": "result/result.json is a FIFO, not a regular file",
                "steps": "output/step_times.json is a FIFO, not a regular file",
                "regex": "output/r.txt is a FIFO, not a regular file"}
    for case, phrase in expected.items():
        assert runs[case].status == "failed" and phrase in runs[case].reason, (case, runs[case].reason)


# Each trial leaves a link where the runner reads, pointing at a file outside the run (a secret of the
# runner's machine); a workload running as another user on a shared volume could do the same
LINKS = r"""
import os, sys
out, res, case, secret = (os.environ["KUBEBENCH_EXP_OUTPUT_PATH"], os.environ["KUBEBENCH_EXP_RESULT_PATH"],
                          sys.argv[1], sys.argv[2])
print("KUBEBENCH_METRIC x=1", flush=True)
if case == "extra":
    os.symlink(secret, os.path.join(out, "extra-0.log"))
elif case == "log":
    os.unlink(os.path.join(out, "worker-0.log"))
    os.symlink(secret, os.path.join(out, "worker-0.log"))
    sys.exit(3)
elif case == "result":
    os.symlink(secret, os.path.join(res, "result.json"))
"""


def test_links_a_workload_leaves_are_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"stolen": 7}\nKUBEBENCH_METRIC stolen=7\nTOP-SECRET\n', encoding="utf-8")
    (tmp_path / "job.py").write_text(LINKS, encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({
        "name": "links", "telemetry": {"enabled": False}, "metrics": [{"name": "x"}],
        "job": {"command": ["python", str(tmp_path / "job.py"), "{{ case }}", str(secret)]},
        "parameters": {"case": ["extra", "log", "result"]},
    }), encoding="utf-8")
    home = tmp_path / "home"
    done = run_cli("run", "spec.yaml", "--id", "links", cwd=tmp_path, timeout=90, env={"KUBEBENCH_HOME": str(home)})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    runs = {r.params["case"]: r for r in open_store(f"sqlite:///{home / 'kubebench.db'}").runs("links")}
    assert (runs["extra"].status, workload_metrics(runs["extra"].metrics)) == ("succeeded", {"x": 1.0})  # a link is no log
    assert (runs["log"].status, runs["log"].exit_code) == ("failed", 3)
    assert (runs["result"].status, runs["result"].reason) == (
        "failed", "result/result.json is a symbolic link, not a regular file")
    for run in runs.values():
        assert "TOP-SECRET" not in run.log_tail and "stolen" not in run.metrics, run.params
