"""N12 (review of 2026-12-02): finding 6 was back in the commands added since (``history``, ``history
accept``, ``check``, ``efficiency``, ``calibrate``, ``doctor``): labels, notes, parameters and reference
sources reached the terminal with ESC intact, and ``[red]…[/red]`` was read as markup. Every command now
prints through one console (``cli.make_console``, a ``present.text.SafeConsole``) that reads no markup
and writes nothing a terminal acts on, whatever a presenter passes it; here, that rule over any text and
any container, and the reviewed commands end to end."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from kubebench.backends.base import Check
from kubebench.cli import app, make_console
from kubebench.cli.doctor import check_line
from kubebench.present.text import SafeConsole
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

# What a terminal acts on instead of showing: C0 (but tab and newline), DEL, C1, bidi controls.
ACTS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
TEXT = st.lists(st.one_of(st.characters(max_codepoint=0x2100), st.sampled_from(
    ["\x1b", "\x07", "\x9b", "\u202e", "[red]", "[/]", ":warning:"]))).map("".join)
EVIL = "\x1b]0;PWNED-TITLE\x07\x1b[2J[red]markup[/red] :warning: \u202eevil"


def _printed(*renderables) -> str:
    out = io.StringIO()
    console = SafeConsole(file=out, width=100, force_terminal=True, color_system="truecolor")
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue()


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_nothing_a_terminal_acts_on_is_written_and_no_markup_is_read(text: str) -> None:
    table = Table(title=text, caption=text)
    table.add_column(text)
    table.add_row(text)
    table.add_row(Text(text))  # a Text built from raw text: the console's last line of defence
    shown = _printed(text, Text(text, style="bold"), table)
    # the only ESC left starts rich's own SGR styles (ESC [ … m), never text of ours
    assert not ACTS.search(re.sub("\x1b\\[[0-9;]*m", "", shown))
    plain = re.sub("\x1b\\[[0-9;]*m", "", _printed(text))
    for tag in ("[red]", "[/]"):
        assert plain.count(tag) >= text.count(tag)  # markup is text: every tag is still there


def test_the_cli_prints_with_the_safe_console() -> None:
    assert isinstance(make_console(), SafeConsole) and isinstance(make_console(stderr=True), SafeConsole)


def test_doctor_lines_style_their_mark_and_show_details_as_text() -> None:
    line = check_line(Check(name="claim [bold]x[/bold]", state="fail", detail=EVIL))
    shown = _printed(line)
    assert "[red]markup[/red]" in shown and "[bold]x[/bold]" in shown and "\\x1b]0;PWNED-TITLE\\x07" in shown
    assert [(s.start, s.end, s.style) for s in line.spans] == [(0, 4, "bold red")] and line.plain.startswith("FAIL claim")


runner = CliRunner(env={"COLUMNS": "160"})


@pytest.fixture
def hostile(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Series ``evil``: labels and a parameter that carry escapes and markup; the newest regresses."""
    url = f"sqlite:///{home / 'kb.db'}"
    monkeypatch.setenv("KUBEBENCH_STORE", url)
    store = open_store(url)
    for i in range(5):
        level = 100.0 if i < 4 else 80.0
        store_experiment(store, f"e{i}", "evil", {"x": [[level, level * 1.01, level * 0.99]] * 2},
                         [{"p": EVIL}, {"p": "ok"}], created_at=1e9 + i, labels={"commit": EVIL})
    store.engine.dispose()
    return url


def _clean(output: str, markup: str = "[red]markup[/red]") -> None:
    assert not ACTS.search(output), ascii(output[:400])
    assert markup in output  # shown, not read as markup


@pytest.mark.parametrize("args, markup", [
    (["history", "evil", "--last", "3"], "[red]markup[/red]"),
    (["check", "evil"], "[red]markup[/red]"),
    (["check", "evil", "-f", "markdown"], "\\[red\\]markup\\[/red\\]"),  # escaped for Markdown (N13)
])
def test_the_new_commands_show_text_of_users_and_stores_as_text(hostile: str, args: list[str], markup: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    _clean(result.output, markup)


def test_history_accept_shows_its_note_as_text(hostile: str) -> None:
    note = "ok \x1b]0;NOTE-TITLE\x07 [bold red]B[/bold red] [red]markup[/red]"
    result = runner.invoke(app, ["history", "accept", "evil", "--at", "e4", "--note", note])
    assert result.exit_code == 0, result.output
    _clean(result.output)
    assert "\\x1b]0;NOTE-TITLE\\x07 [bold red]B[/bold red]" in result.output


def test_calibrate_shows_the_trials_as_text(hostile: str, tmp_path: Path) -> None:
    from kubebench.render.job import job_fingerprint
    from kubebench.spec.load import load_spec
    from kubebench.testing.series import spec_text

    spec = tmp_path / "evil.yaml"
    spec.write_text(spec_text("evil", [("x", "maximize")], None))
    store = open_store(hostile)  # two A/A experiments of this very spec (calibrate takes no others)
    for i in range(2):
        store_experiment(store, f"aa{i}", "evil", {"x": [[100.0, 101.0, 99.0]] * 2}, [{"p": EVIL}, {"p": "ok"}],
                         created_at=2e9 + i, labels={"commit": EVIL}, job_fingerprint=job_fingerprint(load_spec(spec)),
                         text=spec.read_text())
    store.engine.dispose()
    result = runner.invoke(app, ["calibrate", str(spec), "--from", "aa0", "--from", "aa1"])
    assert result.exit_code == 0, result.output
    _clean(result.output)


NAMED = """
name: named
job:
  command: [python, -c, "import os; open(os.environ['KUBEBENCH_EXP_OUTPUT_PATH'] + '/t\\x1b]0;FILE\\x07[red]x.txt', 'w')"]
"""


def test_outputs_lists_the_files_a_workload_named_as_text(home: Path, write) -> None:
    assert runner.invoke(app, ["run", str(write("named.yaml", NAMED)), "--id", "named-1"]).exit_code == 0
    from kubebench.settings import settings

    (run,) = open_store(settings().store_url).runs("named-1")
    result = runner.invoke(app, ["outputs", run.run_id])
    assert result.exit_code == 0, result.output
    assert not ACTS.search(result.output) and "output/t\\x1b]0;FILE\\x07[red]x.txt" in result.output
