"""Review 2026-12-02, N3: what a plan renders is bounded in total, not only per string. A 932-byte
spec (a 100 × 100 grid, each trial rendering a 1,000,000-character string) asks for 10 GB; it is
refused with an error naming the bound on `run`, `run --dry-run`, `render` and the dashboard's launch
(422), whatever the plan had made by then."""

from __future__ import annotations

from pathlib import Path

import pytest
from limits_support import dashboard, in_child, launch
from typer.testing import CliRunner

import kubebench.runner  # noqa: F401  (imported here once: each test's child forks with it)
import kubebench.web.app  # noqa: F401
from kubebench.cli import app
from kubebench.errors import TemplateError
from kubebench.render.budget import size_budget
from kubebench.render.templating import render_string

#: The review's spec (secrepro/specs/grid10k.yaml); GRID_900, the same on a 30 × 30 grid (900 MB).
GRID = ("name: grid\njob:\n  kind: Process\n  command: [echo, \"{{ 'x' * 999000 }}{{ a }}{{ b }}\"]\n"
        f"parameters:\n  a: {list(range(100))}\n  b: {list(range(100))}\n")
GRID_900 = GRID.replace(str(list(range(100))), str(list(range(30))))
BOUND = "KUBEBENCH_MAX_RENDER_CHARS changes it"
#: A lower bound for the tests (8 trials of the grid), so that they stay fast; without the total
#: bound the grid asks for 10 GB whatever this is.
SMALL = {"KUBEBENCH_MAX_RENDER_CHARS": "8000000"}


def test_the_renders_of_a_plan_share_one_budget_of_characters() -> None:
    text = "{{ 'x' * 400 }}"
    with size_budget(1_000):
        assert render_string(text, {}, "trial 1") == "x" * 400
        assert render_string(text, {}, "trial 2") == "x" * 400
        with pytest.raises(TemplateError, match=f"trial 3: .*rendered more than 1,000 characters in all .*{BOUND}"):
            render_string(text, {}, "trial 3")
    with size_budget(1_000):
        with size_budget(10_000):  # an inner budget never adds any
            render_string(text, {}, "a")
            render_string(text, {}, "b")
            with pytest.raises(TemplateError):
                render_string(text, {}, "c")
    assert render_string("{{ 'x' * 999000 }}", {}, "outside a plan") == "x" * 999_000  # only the per-string limit


def test_the_budget_stops_a_render_mid_way() -> None:
    endless = "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}"  # 10 MB, each piece small
    with size_budget(50_000), pytest.raises(TemplateError, match="rendered more than"):
        render_string(endless, {}, "t")


def test_jsonnet_output_counts_too(tmp_path: Path) -> None:
    pytest.importorskip("_jsonnet")
    from kubebench.render.jsonnet import evaluate

    with size_budget(1_000), pytest.raises(TemplateError, match="rendered more than"):
        for _ in range(10):
            evaluate(str(tmp_path / "t.jsonnet"), "{kind: 'Job', x: std.repeat('y', 400)}", {})


def _cli(folder: Path, text: str, *args: str) -> tuple[int, str]:
    spec = folder / "grid.yaml"
    spec.write_text(text)
    result = CliRunner().invoke(app, [*args, str(spec)])
    return result.exit_code, result.output + repr(result.exception)


@pytest.mark.parametrize("command", [("run", "--dry-run"), ("run",), ("render",)])
def test_the_grid_bomb_is_refused_naming_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   command: tuple[str, ...]) -> None:
    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    text = GRID if command == ("run", "--dry-run") else GRID_900
    answer = in_child(_cli, tmp_path, text, *command, timeout=120, memory_bytes=800_000_000, env=SMALL)
    assert answer[0] == "ok", answer
    code, output = answer[1]
    assert code == 2, output[-2000:]
    assert "job.command[1] (trial a=0, b=" in output and f"characters in all (the limit on what a plan renders; {BOUND})" in output
    assert "Traceback" not in output and "MemoryError" not in output
    assert not (tmp_path / "home" / "experiments").exists() or not any((tmp_path / "home" / "experiments").iterdir())


def _launch(home: Path) -> tuple[int, str]:
    with dashboard(home) as client:
        answer = launch(client, GRID_900)
        return answer.status_code, answer.text


def test_the_dashboards_launch_answers_422_naming_the_bound(tmp_path: Path) -> None:
    answer = in_child(_launch, tmp_path / "home", timeout=120, memory_bytes=800_000_000, env=SMALL)
    assert answer[0] == "ok", answer
    status, text = answer[1]
    assert status == 422, text[:500]
    assert "characters in all (the limit on what a plan renders" in text and "KUBEBENCH_MAX_RENDER_CHARS" in text


def test_the_default_bound_is_far_above_real_sweeps() -> None:
    from kubebench import limits

    # 10,000 points (the sweep's limit) of a 3 kB whole-manifest template render 30 MB
    assert limits.RENDER_CHARS.default >= 2 * limits.SWEEP_POINTS.default * 3_000
