"""Finding 14 (the runner's part): reading a run's logs costs bounded memory, however long a line is
(a 1 GB line cost the runner 2.1 GB): the metric protocol, MLPerf logs, the regex post-processor,
a post-processor command's output and the log tail kept with a failed run."""

from __future__ import annotations

import re
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from kubebench.collect.context import RunContext
from kubebench.paths import RunPaths
from limits_support import in_child

LINE = 150_000_000  # characters of the one long line; reading it whole costs twice that or more
ALLOWANCE = 100_000_000  # bytes the child may map beyond what it inherited


def _context(tmp_path: Path) -> RunContext:
    paths = RunPaths(tmp_path / "experiments", tmp_path / "data", "e", "r")
    for folder in (paths.output, paths.result):
        Path(folder).mkdir(parents=True, exist_ok=True)
    return RunContext("e", "t", "r", 0, {}, paths, tmp_path)


def _long_line_log(tmp_path: Path) -> RunContext:
    ctx = _context(tmp_path)
    with open(ctx.output / "worker-0.log", "w", encoding="utf-8") as f:
        for _ in range(LINE // 10_000_000):
            f.write("A" * 10_000_000)
        f.write(' KUBEBENCH_METRIC early=2\nspeed 12.5 img/s\nKUBEBENCH_METRIC x=1\n')
        f.write(':::MLLOG {"time_ms": 1000, "key": "run_start", "value": null, "metadata": {}}\n')
        f.write(':::MLLOG {"time_ms": 5000, "key": "run_stop", "value": null, "metadata": {"status": "success"}}\n')
    return ctx


@pytest.mark.slow
def test_the_metric_protocol_reads_a_huge_line_in_bounded_memory(tmp_path: Path) -> None:
    from kubebench.collect.metrics import metrics_from_logs

    ctx = _long_line_log(tmp_path)
    assert in_child(metrics_from_logs, ctx.output, memory_bytes=ALLOWANCE) == ("ok", {"early": 2.0, "x": 1.0})


@pytest.mark.slow
def test_mllog_and_regex_read_a_huge_line_in_bounded_memory(tmp_path: Path) -> None:
    from kubebench.collect.mllog import MllogConfig, MllogPostprocessor
    from kubebench.collect.postprocess import RegexConfig, RegexPostprocessor

    ctx = _long_line_log(tmp_path)
    mllog = MllogPostprocessor(MllogConfig())
    assert in_child(mllog.run, ctx, memory_bytes=ALLOWANCE) == ("ok", {"run_duration": 4.0, "run_success": 1.0,
                                                                       "time_to_train": 4.0})
    regex = RegexPostprocessor(RegexConfig(file="worker-0.log", pattern=r"speed (?P<speed>[0-9.]+)"))
    assert in_child(regex.run, ctx, memory_bytes=ALLOWANCE) == ("ok", {"speed": 12.5})


@pytest.mark.slow
def test_a_post_processor_command_printing_a_huge_line_costs_bounded_memory(tmp_path: Path) -> None:
    from kubebench.collect.postprocess import CommandConfig, CommandPostprocessor

    ctx = _context(tmp_path)
    script = ("import sys; w = sys.stdout.write; [w('A' * 10_000_000) for _ in range(15)]; "
              "print(); print('KUBEBENCH_METRIC post=3'); sys.stderr.write('done\\n')")
    command = CommandPostprocessor(CommandConfig(command=["python", "-c", script]))
    assert in_child(command.run, ctx, memory_bytes=ALLOWANCE) == ("ok", {"post": 3.0})
    log = ctx.output / "postprocess.log"
    assert log.stat().st_size > LINE and log.read_bytes()[-5:] == b"done\n"  # stdout, then stderr, as before


def test_the_tail_kept_with_a_run_is_short_whatever_its_lines(tmp_path: Path) -> None:
    from kubebench.attempts import log_tail

    ctx = _context(tmp_path)
    (ctx.output / "worker-0.log").write_text("start\n" + "B" * 1_000_000 + "\nlast words\n", encoding="utf-8")
    tail = log_tail(ctx.output, "")
    assert tail.splitlines()[-1] == "last words" and len(tail) < 2_100
    assert tail.splitlines()[0] == "…" + "B" * 2_000


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab.12 \n"), max_size=600),
       pattern=st.sampled_from([r"a(?P<x>[0-9.]+)", r"^(?P<y>\d+)", r"(?<=b)(?P<z>\d{1,3})", r"(?P<w>1+)$",
                                r"b\s*(?P<v>\d*)"]))
def test_windowed_matching_finds_what_matching_the_whole_text_finds(text: str, pattern: str) -> None:
    from kubebench.collect.postprocess import stream_matches

    compiled = re.compile(pattern, re.MULTILINE)
    whole = [m.group(0) for m in compiled.finditer(text)]
    with mock.patch.dict("os.environ", {"KUBEBENCH_MAX_LOG_LINE_CHARS": "16"}):  # windows of 128 characters
        import io

        windowed = [m.group(0) for m in stream_matches(io.StringIO(text), compiled)]
    if all(len(m) < 16 for m in whole):
        assert windowed == whole
