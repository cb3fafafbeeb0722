"""The README as a newcomer reads it: two commands first, then a quickstart that runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from support.timing import scaled

README = Path(__file__).resolve().parents[2] / "README.md"


def section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_the_readme_begins_with_the_two_commands() -> None:
    first_block = README.read_text(encoding="utf-8").split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make demo", "make test"]


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    quick = section("Quickstart: your own job")
    (spec_text,) = re.findall(r"```yaml\n(.*?)```", quick, re.S)
    command = re.search(r"run `(kubebench run my-bench\.yaml)`", quick).group(1)
    spec = yaml.safe_load(spec_text)
    (tmp_path / "my-bench.yaml").write_text(spec_text, encoding="utf-8")
    bin_dir = str(Path(sys.executable).parent)  # `python` in the job and `kubebench` are this venv's
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "COLUMNS": "100"}
    env.pop("KUBEBENCH_HOME", None)
    env.pop("KUBEBENCH_STORE", None)
    done = subprocess.run(command.split(), cwd=tmp_path, env=env, text=True, capture_output=True,
                          timeout=scaled(120))
    assert done.returncode == 0, done.stdout + done.stderr
    trials = spec["parameters"]["n"]
    assert f"{len(trials)} trials, {len(trials) * spec['repeats']} runs" in done.stdout
    rows = [line for line in done.stdout.splitlines() if re.match(r"^\d{7} ", line)]
    assert [row.split()[0] for row in rows] == [str(n) for n in trials]
    assert all(re.search(r" \d+(\.\d+)? [mµ]?s ", row) for row in rows), rows  # a time per trial, SI units
    assert (tmp_path / "kubebench-data" / "kubebench.db").exists()  # the default home: ./kubebench-data
