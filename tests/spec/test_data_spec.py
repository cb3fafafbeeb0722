"""``data:`` of a spec: datasets and prepare steps, each refused with its file:line when malformed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kubebench.errors import SpecError
from kubebench.spec.data import DatasetSpec, DataSpec, PrepareStep
from kubebench.spec.load import load_spec

HEX = "9f2c" * 16


def test_a_dataset_with_its_defaults() -> None:
    d = DatasetSpec(name="digits", url="s3://b/d.tar.gz", sha256="SHA256:" + HEX.upper())
    assert (d.sha256, d.into, d.unpack, d.timeout, d.retries) == (HEX, "", True, 300.0, 2)


@pytest.mark.parametrize(("fields", "message"), [
    ({"sha256": HEX, "checksums": "SUMS"}, "give `sha256` or `checksums`"),
    ({}, "give `sha256` or `checksums`"),
    ({"sha256": "abc"}, "must be 64 hexadecimal digits"),
    ({"sha256": HEX, "into": "../up"}, "must be a folder inside the dataset's"),
    ({"sha256": HEX, "into": "/abs"}, "must be a folder inside the dataset's"),
    ({"sha256": HEX, "name": "Digits"}, "must be 1 to 63 lowercase letters"),
    ({"sha256": HEX, "timeout": "soon"}, "is not a duration"),
])
def test_bad_datasets_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        DatasetSpec(**({"name": "digits", "url": "https://h/d.zip"} | fields))


def test_templated_fields_are_checked_once_rendered() -> None:
    d = DatasetSpec(name="imagenet-{{ size }}", url="https://h/{{ size }}.tar", sha256="{{ sums[size] }}")
    assert d.name == "imagenet-{{ size }}" and d.sha256 == "{{ sums[size] }}"


def test_a_prepare_step_stringifies_its_command_and_checks_env_names() -> None:
    step = PrepareStep(name="jpegs", command=["python", "make.py", "--count", 200, "--fast", True], timeout="10m")
    assert step.command == ["python", "make.py", "--count", "200", "--fast", "true"] and step.timeout == 600.0
    with pytest.raises(ValidationError, match="environment variable name 'A=B'"):
        PrepareStep(name="jpegs", command=["x"], env={"A=B": 1})
    with pytest.raises(ValidationError, match="at least 1 item"):
        PrepareStep(name="jpegs", command=[])


def test_names_are_unique_across_datasets_and_steps() -> None:
    with pytest.raises(ValidationError, match="dataset names must be unique: jpegs given more than once"):
        DataSpec(datasets=[{"name": "jpegs", "url": "u", "sha256": HEX}], prepare=[{"name": "jpegs", "command": ["x"]}])
    assert DataSpec().empty and not DataSpec(prepare=[{"name": "a", "command": ["x"]}]).empty


def test_a_bad_data_section_names_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: b\njob: {command: [echo]}\ndata:\n  datasets:\n    - name: digits\n"
                    "      url: https://h/d.tar\n      sha256: nothex\n")
    with pytest.raises(SpecError) as error:
        load_spec(spec)
    assert f"{spec}:7" in str(error.value) and "64 hexadecimal digits" in str(error.value)
    spec.write_text("name: b\njob: {command: [echo]}\ndata:\n  prepare:\n    - {name: x, command: [a], image_: y}\n")
    with pytest.raises(SpecError, match=r"spec\.yaml:5.*image_"):
        load_spec(spec)
