"""The dashboard's launch: errors that name no line still answer 422 (a NameError answered 500),
limits answer 422, and a slow render does not hold up the other requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from limits_support import dashboard, launch


@pytest.mark.parametrize("spec, message", [
    ("name: e\njob: {command: [echo]}\nparameters: {a: []}\n", "parameter 'a' is an empty list"),
    ("name: e\njob: {command: [echo]}\nparameters: {a: [1]}\nexclude: [{a: 1}]\n", "the sweep is empty"),
])
def test_an_error_without_a_line_is_a_422_about_the_spec(tmp_path: Path, spec: str, message: str) -> None:
    with dashboard(tmp_path / "home") as client:
        answer = launch(client, spec)
    assert answer.status_code == 422, answer.text[:500]
    problem = answer.json()["errors"][0]
    assert problem["loc"] == "spec" and message in problem["message"]
