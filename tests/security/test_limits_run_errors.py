"""Finding 10: a NUL in a value or an ``=`` in an environment variable's name is a located spec error,
and an exception inside one run fails that run (with the reason) while the others still run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from kubebench.errors import SpecError
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings as make_settings
from kubebench.spec.load import load_spec
from kubebench.spec.model import BenchmarkSpec, LoadedSpec
from kubebench.store.store import open_store
from limits_support import dashboard, launch, run_cli

REPORT = "import sys, kubebench; kubebench.report(x=1)"


@settings(max_examples=60, deadline=None)
@given(value=st.text(alphabet=st.sampled_from("ab =\0\n$;"), max_size=8))
def test_a_parameter_value_with_nul_is_a_located_spec_error(tmp_path_factory, value: str) -> None:
    folder = tmp_path_factory.mktemp("nul")
    spec = {"name": "nul", "job": {"command": ["echo", "{{ v }}"]}, "parameters": {"v": ["ok", value]}}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    if "\0" in value:
        with pytest.raises(SpecError, match=r"spec\.yaml:\d+:\d+: parameters\.v\.1: holds a NUL character"):
            load_spec(path)
    else:
        assert load_spec(path).spec.parameters["v"] == ["ok", value]


@pytest.mark.parametrize("name", ["A=B", "", "A\0B", "=x"])
def test_an_env_name_that_no_process_accepts_is_a_located_spec_error(write, name: str) -> None:
    path = write("spec.yaml", f"""
        name: env
        job:
          command: [echo, hi]
          env: {{{yaml.safe_dump(name).splitlines()[0]}: c, OK: d}}
        """)
    with pytest.raises(SpecError, match=r"spec\.yaml:4:\d+: job\.env\.") as info:
        load_spec(path)
    assert ("must not be empty or hold '='" in str(info.value)) or ("NUL" in str(info.value))


@pytest.mark.slow
def test_the_reviewed_specs_exit_2_on_the_cli(tmp_path: Path) -> None:
    (tmp_path / "inj.yaml").write_text(
        'name: inj\njob:\n  command: [echo, "{{ v }}"]\n  env: {X: "{{ v }}"}\n'
        'parameters:\n  v: ["fine", "a\\nb=c\\u0000d"]\n', encoding="utf-8")
    (tmp_path / "env.yaml").write_text('name: injenv\njob:\n  command: [echo, hi]\n  env: {"A=B": c}\n', encoding="utf-8")
    for name, where in (("inj.yaml", "inj.yaml:6:15: parameters.v.1"), ("env.yaml", "env.yaml:4:9: job.env.A=B")):
        done = run_cli("run", name, "--id", "x", cwd=tmp_path, env={"KUBEBENCH_HOME": str(tmp_path / "home")})
        assert done.returncode == 2, done.stderr[-3000:]
        assert where in done.stderr and "Traceback" not in done.stderr


def test_the_dashboard_answers_422_at_the_env_name(tmp_path: Path) -> None:
    spec = 'name: injenv\njob:\n  command: [echo, hi]\n  env: {"A=B": c}\n'
    with dashboard(tmp_path / "home") as client:
        answer = launch(client, spec)
    assert answer.status_code == 422, answer.text[:500]
    problem = answer.json()["errors"][0]
    assert (problem["line"], problem["field"]) == (4, "job.env.A=B")


def test_a_rendered_nul_is_refused_before_anything_runs(home: Path) -> None:
    loaded = _loaded(home, {"command": ["echo", "{{ '%c'|format(0) if v == 2 else v }}"]}, {"v": [1, 2]})
    with pytest.raises(SpecError, match=r"job\.command\[1\] \(trial v=2\): the value rendered for this trial holds a NUL"):
        execute(plan_experiment(loaded, make_settings(), "nul-render"), open_store(make_settings().store_url))


@pytest.mark.slow
def test_an_error_inside_one_run_fails_that_run_and_the_next_runs_go_on(tmp_path: Path) -> None:
    # the second repeat's argument holds a NUL: validation renders only the first repeat of a trial,
    # so only the run itself finds it (the process cannot start); before, the runner died and left
    # that run `running` and the third never started
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({
        "name": "onebad", "repeats": 3, "telemetry": {"enabled": False}, "metrics": [{"name": "x"}],
        "job": {"command": ["python", "-c", REPORT, "{{ '%c'|format(0) if kubebench.repeat == 1 else 'ok' }}"]},
    }), encoding="utf-8")
    home = tmp_path / "home"
    done = run_cli("run", "spec.yaml", "--id", "onebad", cwd=tmp_path, env={"KUBEBENCH_HOME": str(home)})
    assert done.returncode == 1, done.stderr[-3000:]  # failed runs, not a crash
    assert "Traceback" not in done.stderr
    runs = sorted(open_store(f"sqlite:///{home / 'kubebench.db'}").runs("onebad"), key=lambda r: r.repeat)
    assert [r.status for r in runs] == ["succeeded", "failed", "succeeded"]
    assert re.search(r"NUL character|embedded null", runs[1].reason), runs[1].reason


def test_a_backend_that_raises_fails_each_run_with_the_reason(home: Path) -> None:
    # a spec made in Python skips the YAML checks: the process start itself raises ValueError
    loaded = _loaded(home, {"command": ["python", "-c", REPORT], "working_dir": "sub\0dir"}, {"v": [1, 2]})
    store = open_store(make_settings().store_url)
    execute(plan_experiment(loaded, make_settings(), "raising"), store)
    runs = store.runs("raising")
    assert len(runs) == 2 and {r.status for r in runs} == {"failed"}
    assert all("ValueError" in r.reason and "null" in r.reason for r in runs), [r.reason for r in runs]


def _loaded(folder: Path, job: dict, parameters: dict) -> LoadedSpec:
    spec = BenchmarkSpec(name="api", job=job, parameters=parameters, telemetry={"enabled": False})
    return LoadedSpec(spec=spec, source="api", base_dir=folder, text="")
