"""The datasets of a plan (rendered per trial, one per name) and their cache keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.data.keys import fetch_key, input_digests, step_key
from kubebench.data.plan import Fetch, Step, plan_data
from kubebench.errors import SpecError, TemplateError
from kubebench.plan.plan import Trial
from kubebench.spec.data import DataSpec

HEX = "ab" * 32


def trials(*points: dict) -> list[Trial]:
    return [Trial(f"t{i}", i, dict(p)) for i, p in enumerate(points)]


def data(**sections) -> DataSpec:
    return DataSpec.model_validate(sections)


def test_templated_datasets_are_one_per_rendered_name_with_their_trials() -> None:
    spec = data(prepare=[{"name": "jpegs-{{ images }}", "command": ["python", "make.py", "{{ images }}"],
                          "env": {"SEED": "{{ seed }}"}}])
    items = plan_data(spec, trials({"images": 10, "workers": 0, "seed": 1}, {"images": 10, "workers": 1, "seed": 1},
                                   {"images": 20, "workers": 0, "seed": 1}))
    assert [(i.name, i.trials) for i in items] == [("jpegs-10", ("t0", "t1")), ("jpegs-20", ("t2",))]
    step = items[1].source
    assert isinstance(step, Step) and step.command == ("python", "make.py", "20") and step.env == (("SEED", "1"),)


def test_one_name_for_different_data_is_refused_naming_both_trials() -> None:
    spec = data(prepare=[{"name": "jpegs", "command": ["make", "{{ images }}"]}])
    with pytest.raises(SpecError, match=r"dataset 'jpegs' would hold different data for trials images=1 and "
                                        r"images=2: put the parameters .* in its name"):
        plan_data(spec, trials({"images": 1}, {"images": 2}))


def test_rendered_names_and_checksums_are_checked() -> None:
    with pytest.raises(SpecError, match=r"data\.prepare\[d-\{\{ x \}\}\]\.name \(trial x=A B\): dataset name 'd-A B'"):
        plan_data(data(prepare=[{"name": "d-{{ x }}", "command": ["c"]}]), trials({"x": "A B"}))
    with pytest.raises(SpecError, match=r"sha256 \(trial s=zz\): 'zz' is not 64 hexadecimal digits"):
        plan_data(data(datasets=[{"name": "d", "url": "u", "sha256": "{{ s }}"}]), trials({"s": "zz"}))
    with pytest.raises(TemplateError, match=r"data\.datasets\[d\]\.url \(trial no parameters\)"):
        plan_data(data(datasets=[{"name": "d", "url": "{{ nope }}", "sha256": HEX}]), trials({}))


def test_no_data_plans_nothing() -> None:
    assert plan_data(None, trials({})) == [] and plan_data(data(), trials({})) == []


def fetch(**more) -> Fetch:
    return Fetch(**({"name": "d", "url": "https://h/d.tar", "sha256": HEX, "checksums": None, "into": "",
                     "unpack": True, "timeout": 5.0, "retries": 1} | more))


def test_a_fetch_key_is_its_url_and_checksum_not_its_patience() -> None:
    key = fetch_key(fetch(), HEX)
    assert len(key) == 20 and key == fetch_key(fetch(timeout=60.0, retries=9, name="other"), HEX)
    assert key != fetch_key(fetch(), "cd" * 32)
    assert key != fetch_key(fetch(url="https://h/e.tar"), HEX)
    assert key != fetch_key(fetch(into="sub"), HEX)


def step(command: tuple[str, ...], inputs: tuple[str, ...] = (), **more) -> Step:
    return Step(**({"name": "s", "command": command, "image": None, "env": (), "resources": (), "inputs": inputs,
                    "timeout": 60.0, "retries": 0} | more))


def test_a_step_key_follows_its_command_image_env_and_input_files(tmp_path: Path) -> None:
    (tmp_path / "make.py").write_text("print(1)")
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "a.txt").write_text("a")
    base = step_key(step(("python", "make.py")), tmp_path)
    assert base == step_key(step(("python", "make.py"), timeout=9.0, retries=3, resources=(("cpu", "4"),)), tmp_path)
    assert base != step_key(step(("python", "make.py", "--n", "2")), tmp_path)
    assert base != step_key(step(("python", "make.py"), image="other:1"), tmp_path)
    assert base != step_key(step(("python", "make.py"), env=(("SEED", "2"),)), tmp_path)
    (tmp_path / "make.py").write_text("print(2)")  # the script named on the command line changed
    changed = step_key(step(("python", "make.py")), tmp_path)
    assert changed != base
    with_list = step(("python", "make.py"), inputs=("lists",))
    assert set(input_digests(with_list, tmp_path)) == {"make.py", "lists/a.txt"}
    first = step_key(with_list, tmp_path)
    (tmp_path / "lists" / "a.txt").write_text("b")
    assert step_key(with_list, tmp_path) != first


def test_inputs_must_match_files_inside_the_spec_folder(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"inputs: 'none\*\.py' matches no file"):
        input_digests(step(("x",), inputs=("none*.py",)), tmp_path)
    with pytest.raises(SpecError, match=r"inputs: '\.\./x' must be a path inside the spec's folder"):
        input_digests(step(("x",), inputs=("../x",)), tmp_path)
    assert input_digests(step(("/etc/hostname", "../x")), tmp_path) == {}  # no file of the spec's folder
