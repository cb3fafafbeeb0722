"""The post-processors' bounded reads and their messages (issue #20: mutants of
``kubebench.collect.postprocess`` no test killed).

``stream_matches`` reads a file in windows of 8 × ``KUBEBENCH_MAX_LOG_LINE_CHARS`` characters: a match
shorter than the limit is found as in the whole text, once; a longer one is cut at a window's end, and
lookbehinds see 4,096 characters before a window. With the limit at 16, windows are 128 characters.
A command's metrics come from its stdout only (its stderr follows in the same log file), a failure's
message quotes the last lines of the log's last 64,000 bytes, and bad bytes never stop either."""

from __future__ import annotations

import io
import os
import re
import sys

import pytest

from kubebench.collect.context import RunContext
from kubebench.collect.postprocess import (
    CommandConfig,
    CommandPostprocessor,
    PythonConfig,
    PythonPostprocessor,
    RegexConfig,
    RegexPostprocessor,
    mean_of,
    stream_matches,
)
from kubebench.errors import PostprocessError


@pytest.fixture
def limit16(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEBENCH_MAX_LOG_LINE_CHARS", "16")  # windows of 128 characters


class _Reads(io.StringIO):
    """A text file that records the size of each read and fails a read after the one that found its end."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.sizes: list[int | None] = []
        self.ended = False

    def read(self, size: int | None = -1) -> str:
        assert not self.ended, "read again after the end of the file"
        self.sizes.append(size)
        data = super().read(size)
        self.ended = not data
        return data


def _spans(text: str, pattern: str) -> list[tuple[int, int]]:
    return [m.span() for m in stream_matches(io.StringIO(text), re.compile(pattern, re.MULTILINE))]


def _found(text: str, pattern: str) -> list[str]:
    return [m.group(0) for m in stream_matches(io.StringIO(text), re.compile(pattern, re.MULTILINE))]


def test_a_file_is_read_in_windows_of_eight_limits_until_its_first_empty_read(limit16: None) -> None:
    f = _Reads("ab1 " * 75)  # 300 characters
    assert len(list(stream_matches(f, re.compile(r"\d")))) == 75
    assert f.sizes == [128, 128, 128, 128]  # 128, 128, 44, then the end
    empty = _Reads("")
    assert list(stream_matches(empty, re.compile(r"\d*"))) != [] and empty.sizes == [128]


def test_nothing_is_found_that_the_file_does_not_hold(limit16: None) -> None:
    assert _found("", r"[A-Z]+") == [] and _found("abc", r"[A-Z]+") == []
    assert _spans("", r"X*") == [(0, 0)]


def test_a_short_match_across_a_window_edge_is_found_whole(limit16: None) -> None:
    text = "x" * 126 + "12345" + "x" * 200  # the number straddles the first window's end (128)
    assert _spans(text, r"\d+") == [(126, 131)]
    assert _spans("x" * 120 + "1" * 15 + "x", r"\d+") == [(120, 135)]


def test_every_match_is_found_once_however_long_the_file(limit16: None) -> None:
    text = "".join(f"v={i}; " for i in range(1500))  # > 8,000 characters: the kept text is trimmed
    assert _found(text, r"v=\d+") == [f"v={i}" for i in range(1500)]
    assert len(text) > 4096 * 2


def test_an_empty_match_at_a_window_s_safe_point_is_found_once(limit16: None) -> None:
    text = "a" * 111 + "\n" + "b" * 100  # a line starts at 112 = 128 - 16
    assert _spans(text, r"^") == [(0, 0), (112, 112)]


@pytest.mark.parametrize(("text", "pattern", "spans"), [
    ("a" * 300, r"a+", [(0, 128), (128, 256), (256, 300)]),
    ("x" * 112 + "1" * 20 + "x" * 10, r"\d+", [(112, 128), (128, 132)]),  # exactly the limit: cut too
    ("y" + "x" * 109 + "1" * 40 + "x" * 20, r"y|\d{20}", [(0, 1), (112, 132)]),
    ("x" * 110 + "\n" + "1" * 40 + "x" * 20, r"^|\d{20}", [(0, 0), (111, 111), (112, 132)]),
    ("x" * 111 + "1" * 25, r"\d{20}|\d", [(111, 112), (112, 132), (132, 133), (133, 134), (134, 135), (135, 136)]),
    ("x" * 111 + "a" + "b" * 30, r"a(?!b{20})", [(111, 112)]),  # it looked 16 characters ahead, not 20
])
def test_a_match_longer_than_the_limit_is_cut_at_the_window_that_holds_it(limit16: None, text: str, pattern: str,
                                                                         spans: list[tuple[int, int]]) -> None:
    assert _spans(text, pattern) == spans


def test_lookbehinds_see_4096_characters_before_a_window(limit16: None) -> None:
    text = "a" * 5115 + "b" + "aaaa"  # the b is last seen at 4,096 characters into a window
    assert _found(text, r"(?<=a{4096})b") == ["b"]
    assert _found(text, r"(?<=a{4097})b") == []


def test_the_mean_is_the_sum_over_the_count_and_stays_finite_when_the_sum_overflows(ctx: RunContext) -> None:
    assert mean_of(10.0, 4, 0.0, 1.0) == 2.5  # no clamping of a finite mean
    (ctx.output / "big.log").write_text("v 1e308\nv 1.5e308\nw -1e308\nw -1.5e308\n")
    config = RegexConfig(file="big.log", pattern=r"v (?P<v>\S+)|w (?P<w>\S+)", select="mean")
    assert RegexPostprocessor(config).run(ctx) == {"v": 1.5e308, "w": -1.5e308}  # the largest, the smallest
    assert mean_of(float("inf"), 2, 1.0, 1e308) == 1e308 and mean_of(float("-inf"), 2, -1e308, -1.0) == -1e308


def test_a_command_s_metrics_come_from_its_stdout_only(ctx: RunContext) -> None:
    script = ("import sys\nprint('KUBEBENCH_METRIC a=1')\nsys.stdout.flush()\n"
              "print('KUBEBENCH_METRIC b=2', file=sys.stderr)\nsys.stderr.flush()\nprint('KUBEBENCH_METRIC c=3')")
    assert CommandPostprocessor(CommandConfig(command=[sys.executable, "-c", script])).run(ctx) == {"a": 1.0, "c": 3.0}
    log = (ctx.output / "postprocess.log").read_text()
    assert log == "KUBEBENCH_METRIC a=1\nKUBEBENCH_METRIC c=3\nKUBEBENCH_METRIC b=2\n"


def test_bad_bytes_on_a_command_s_stdout_are_replaced(ctx: RunContext) -> None:
    script = r"import sys; sys.stdout.buffer.write(b'junk \xff\xfe\nKUBEBENCH_METRIC n=1 \xff\n')"
    assert CommandPostprocessor(CommandConfig(command=[sys.executable, "-c", script])).run(ctx) == {"n": 1.0}


def test_a_command_does_not_read_the_runner_s_stdin(ctx: RunContext) -> None:
    script = "import sys; print('KUBEBENCH_METRIC read=%d' % len(sys.stdin.read()))"
    saved = os.dup(0)
    read, write = os.pipe()
    try:
        os.write(write, b"typed by someone")
        os.close(write)
        os.dup2(read, 0)  # a stdin with something to read, like a terminal's
        result = CommandPostprocessor(CommandConfig(command=[sys.executable, "-c", script], timeout=60)).run(ctx)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read)
    assert result == {"read": 0.0}


def _failure(ctx: RunContext, stderr: bytes) -> str:
    script = f"import sys; sys.stderr.buffer.write({stderr!r}); sys.exit(1)"
    with pytest.raises(PostprocessError) as failed:
        CommandPostprocessor(CommandConfig(command=[sys.executable, "-c", script])).run(ctx)
    return str(failed.value).split(" exited 1: ", 1)[1]


def test_a_failure_quotes_the_last_lines_of_the_log_s_last_64000_bytes(ctx: RunContext) -> None:
    assert _failure(ctx, b"far" + b"\n" * 63_999) == "r"  # 64,002 bytes: the last 64,000 start at the r


def test_a_failure_quotes_500_characters_of_a_line_and_replaces_bad_bytes(ctx: RunContext) -> None:
    assert _failure(ctx, b"x" * 600 + b"\n") == "x" * 500
    assert _failure(ctx, b"bad \xff\xfe bytes\n") == "bad \ufffd\ufffd bytes"


def test_a_python_function_s_bad_metric_name_is_named_in_the_error(ctx: RunContext, write) -> None:
    long = "9" * 150
    write("kb_g_names.py", f"""
        def spaced(ctx):
            return {{"ok": 1, "bad name": 2}}

        def long(ctx):
            return {{"{long}": 1}}
    """)
    with pytest.raises(PostprocessError) as spaced:
        PythonPostprocessor(PythonConfig(function="kb_g_names:spaced")).run(ctx)
    assert str(spaced.value) == ("kb_g_names:spaced: 'bad name' is not a metric name: use letters, digits, '_', '.', "
                                 "':', '/', '-', starting with a letter or '_'")
    with pytest.raises(PostprocessError, match=rf"^kb_g_names:long: '{'9' * 100}' is not a metric name"):
        PythonPostprocessor(PythonConfig(function="kb_g_names:long")).run(ctx)
    sys.modules.pop("kb_g_names", None)
