"""The ``mllog`` post-processor: MLPerf log events → time-to-train, time-to-accuracy and the rest."""

from __future__ import annotations

import json
from pathlib import Path, PurePath

import pytest

from kubebench.collect.context import RunContext
from kubebench.collect.mllog import MllogConfig, MllogPostprocessor, parse_events, summarize
from kubebench.errors import PostprocessError
from kubebench.paths import RunPaths
from kubebench.spec.model import BenchmarkSpec


def line(key: str, t: float, value=None, **metadata) -> str:
    record = {"namespace": "", "time_ms": int(t * 1000), "event_type": "POINT_IN_TIME", "key": key,
              "value": value, "metadata": {"file": "train.py", "lineno": 1, **metadata}}
    return ":::MLLOG " + json.dumps(record)


def log(status: str = "success", accuracies=(0.5, 0.7, 0.8)) -> list[str]:
    lines = [line("init_start", 100.0), line("init_stop", 102.5), line("run_start", 103.0)]
    for epoch, acc in enumerate(accuracies, 1):
        lines += [line("epoch_stop", 103 + 10 * epoch, epoch_num=epoch),
                  line("eval_accuracy", 104 + 10 * epoch, acc, epoch_num=epoch)]
    return lines + [line("run_stop", 140.0, status=status)]


def test_successful_run() -> None:
    metrics = summarize(parse_events(log()))
    assert metrics == pytest.approx({
        "run_duration": 37.0, "run_success": 1.0, "time_to_train": 37.0, "init_time": 2.5,
        "eval_accuracy": 0.8, "best_eval_accuracy": 0.8, "evals": 3.0,
        "time_to_accuracy": 31.0,  # the eval that ended the run: 134 - 103
        "epochs": 3.0,
    })


def test_target_picks_the_first_eval_reaching_it() -> None:
    assert summarize(parse_events(log()), target=0.7)["time_to_accuracy"] == pytest.approx(21.0)
    assert "time_to_accuracy" not in summarize(parse_events(log()), target=0.9)


def test_aborted_run_has_no_time_to_train() -> None:
    metrics = summarize(parse_events(log("aborted", (0.3, 0.4))))
    assert metrics["run_success"] == 0 and metrics["run_duration"] == pytest.approx(37.0)
    assert "time_to_train" not in metrics and "time_to_accuracy" not in metrics
    assert metrics["best_eval_accuracy"] == 0.4


def test_prefixes_and_garbled_lines_are_tolerated() -> None:
    lines = ["[1,0]<stdout>:" + line("run_start", 1.0), ":::MLLOG {not json", "plain output",
             "INFO|2024|x.py|3| " + line("run_stop", 4.0, status="success")]
    assert summarize(parse_events(lines))["time_to_train"] == pytest.approx(3.0)


def context(tmp_path: Path) -> RunContext:
    paths = RunPaths(PurePath(tmp_path), PurePath(tmp_path / "data"), "exp", "run")
    Path(paths.output).mkdir(parents=True)
    return RunContext("exp", "trial", "run", 0, {}, paths, tmp_path)


def test_reads_the_first_replica_log_that_has_mllog_lines(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    (ctx.output / "master-0.log").write_text("no mlperf lines here\n")
    (ctx.output / "worker-0.log").write_text("\n".join(log()) + "\n")
    (ctx.output / "worker-1.log").write_text("\n".join(log(accuracies=(0.9,))) + "\n")
    metrics = MllogPostprocessor(MllogConfig()).run(ctx)
    assert metrics["evals"] == 3  # worker-0's log, the first in rank order with events


def test_named_file_and_clear_errors(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    (ctx.output / "train.txt").write_text("\n".join(log()))
    assert MllogPostprocessor(MllogConfig(file="train.txt")).run(ctx)["epochs"] == 3
    with pytest.raises(PostprocessError, match=r"mllog: output/missing.log does not exist"):
        MllogPostprocessor(MllogConfig(file="missing.log")).run(ctx)
    (ctx.output / "master-0.log").write_text("hello\n")
    (ctx.output / "train.txt").unlink()
    with pytest.raises(PostprocessError, match=r"mllog: no :::MLLOG lines in any replica log of output/"):
        MllogPostprocessor(MllogConfig()).run(ctx)


def test_spec_accepts_it_by_name_and_checks_options() -> None:
    spec = BenchmarkSpec.model_validate({"name": "b", "job": {"command": ["x"]},
                                         "postprocess": [{"kind": "mllog", "target": 0.75}]})
    assert spec.postprocess[0] == MllogConfig(target=0.75)
    with pytest.raises(ValueError, match="inside the run's output/ folder"):
        MllogConfig(file="../etc/passwd")


def test_a_line_with_two_records_interleaved_is_skipped_not_half_read() -> None:
    first, second = line("run_start", 1.0), line("run_stop", 2.0, status="success")
    garbled = first[: len(first) // 2] + second  # rank 1's record written into rank 0's
    assert parse_events([garbled]) == []


def test_a_log_cut_short_or_missing_its_start_gives_no_duration() -> None:
    cut = log()[:-1]  # killed before run_stop
    assert {"run_duration", "run_success", "time_to_train"}.isdisjoint(summarize(parse_events(cut)))
    headless = [entry for entry in log() if '"run_start"' not in entry]
    assert "run_duration" not in summarize(parse_events(headless))
    no_init_stop = [entry for entry in log() if '"init_stop"' not in entry]
    assert "init_time" not in summarize(parse_events(no_init_stop))


def test_the_configured_target_and_accuracy_key_are_used(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    lines = [entry.replace('"eval_accuracy"', '"top1"') for entry in log()]
    (ctx.output / "worker-0.log").write_text("\n".join(lines) + "\n")
    metrics = MllogPostprocessor(MllogConfig(target=0.7, accuracy_key="top1")).run(ctx)
    assert metrics["eval_accuracy"] == 0.8 and metrics["time_to_accuracy"] == pytest.approx(21.0)


def test_bytes_that_are_not_utf8_are_replaced_not_fatal(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    (ctx.output / "worker-0.log").write_bytes(b"\xff\xfe caf\xe9 \xe2\x82\n" + "\n".join(log()).encode() + b"\n")
    assert MllogPostprocessor(MllogConfig()).run(ctx)["evals"] == 3


def test_a_named_file_without_records_is_named_in_the_error(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    (ctx.output / "empty.log").write_text("nothing\n")
    with pytest.raises(PostprocessError, match=r"^mllog: no :::MLLOG lines in output/empty.log$"):
        MllogPostprocessor(MllogConfig(file="empty.log")).run(ctx)
