"""The promised Python API (kubebench.api): its names are pinned, and docs/python-api.md's example runs
as it is written there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import kubebench.api as kb

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"

PROMISED = [
    "ExperimentRecord", "KubebenchError", "LoadedSpec", "RunRecord", "Settings", "SpecError", "TrialComparison",
    "TrialResults", "__version__", "compare", "load", "mark", "open_store", "report", "results", "run",
]


def test_the_api_promises_exactly_these_names() -> None:
    assert sorted(kb.__all__) == sorted(PROMISED)
    assert all(hasattr(kb, name) for name in kb.__all__)


def test_every_promised_name_is_in_the_docs_table() -> None:
    text = DOC.read_text()
    assert [n for n in PROMISED if n != "__version__" and f"`{n}" not in text] == []


def test_the_docs_example_runs_as_written(tmp_path: Path) -> None:
    example = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert example is not None
    script = tmp_path / "example.py"
    script.write_text(example.group(1))
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run([sys.executable, str(script), str(home)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["{'n': 1} {'succeeded': 2}", "{'n': 2} {'succeeded': 2}"]
    assert lines[2:] == ["{'n': 1} unchanged", "{'n': 2} unchanged"]


def test_a_bad_spec_is_a_spec_error_naming_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\njob:\n  command: [true]\nrepeats: zero\n")
    try:
        kb.load(spec)
    except kb.SpecError as e:
        assert f"{spec}:4" in str(e) and "repeats" in str(e)
    else:
        raise AssertionError("a bad spec loaded")
