"""Metrics from protocol lines, result.json and every post-processor kind, and their failures."""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from pathlib import Path

import pytest

from kubebench import report
from kubebench.collect.context import RunContext
from kubebench.collect.metrics import collect, metrics_from_logs, parse_metric_lines, read_result_json
from kubebench.collect.mllog import MllogConfig
from kubebench.collect.postprocess import (
    CommandConfig,
    CommandPostprocessor,
    PythonConfig,
    PythonPostprocessor,
    RegexConfig,
    RegexPostprocessor,
)
from kubebench.errors import PostprocessError
from kubebench.spec.model import MetricSpec


def test_report_prints_the_line_protocol(capsys: pytest.CaptureFixture) -> None:
    report(images_per_sec=12.5, loss=0.25)
    line = capsys.readouterr().out
    assert line == "KUBEBENCH_METRIC images_per_sec=12.5 loss=0.25\n"
    assert parse_metric_lines([line]) == {"images_per_sec": 12.5, "loss": 0.25}


@pytest.mark.parametrize("bad", [{"bad name": 1.0}, {"x": float("nan")}])
def test_report_rejects_bad_metrics(bad: dict) -> None:
    with pytest.raises(ValueError):
        report(**bad)


def test_last_value_in_a_log_wins_and_rank_zero_wins_across_logs(ctx: RunContext) -> None:
    (ctx.output / "worker-0.log").write_text("KUBEBENCH_METRIC x=1 y=7\nnoise\n[rank1] KUBEBENCH_METRIC x=2\n")
    (ctx.output / "master-0.log").write_text("KUBEBENCH_METRIC x=10\nKUBEBENCH_METRIC x=nope\n")
    assert metrics_from_logs(ctx.output) == {"x": 10.0, "y": 7.0}


def test_result_json_numbers_and_strings(ctx: RunContext) -> None:
    # The original Kubebench wrote values as strings: numeric strings are metrics, others info.
    path = ctx.result / "result.json"
    path.write_text(json.dumps({"total_images/sec": "812.5", "model": "resnet50", "steps": 100}))
    assert read_result_json(path) == ({"total_images/sec": 812.5, "steps": 100.0}, {"model": "resnet50"})
    path.write_text("[1, 2]")
    with pytest.raises(PostprocessError, match="one flat JSON object"):
        read_result_json(path)
    path.write_text("{broken")
    with pytest.raises(PostprocessError, match="not valid JSON"):
        read_result_json(path)


def test_result_json_booleans_nulls_and_nested_values_are_info_not_metrics(ctx: RunContext) -> None:
    # Only numbers are metrics: true is not 1.0, null is not 0, and NaN or infinity are no measurement.
    path = ctx.result / "result.json"
    path.write_text('{"ok": true, "cached": false, "loss": null, "nested": {"a": 1}, "list": [1, 2],'
                    ' "nan": NaN, "inf": "Infinity", "zero": 0, "neg": "-1.5e3"}')
    numbers, info = read_result_json(path)
    assert numbers == {"zero": 0.0, "neg": -1500.0}
    assert info == {"ok": "true", "cached": "false", "loss": "null", "nested": '{"a": 1}', "list": "[1, 2]",
                    "nan": "NaN", "inf": "Infinity"}


def test_a_boolean_in_result_json_cannot_satisfy_a_required_metric(ctx: RunContext) -> None:
    (ctx.result / "result.json").write_text(json.dumps({"passed": True}))
    collected = collect(ctx, [], [MetricSpec(name="passed")])
    assert collected.metrics == {} and collected.info == {"passed": "true"}
    assert collected.error == "metric 'passed' missing from the run's outputs"


def test_regex_select_modes(ctx: RunContext) -> None:
    (ctx.output / "worker-0.log").write_text("images/sec: 10.0\nimages/sec: 30.0\nimages/sec: 20.0\n")
    expected = {"first": 10.0, "last": 20.0, "mean": 20.0, "min": 10.0, "max": 30.0}
    for select, value in expected.items():
        config = RegexConfig(file="worker-0.log", pattern=r"images/sec: (?P<ips>[0-9.]+)", select=select)
        assert RegexPostprocessor(config).run(ctx) == {"ips": value}


def test_regex_anchors_match_at_every_line_and_bad_bytes_are_replaced(ctx: RunContext) -> None:
    (ctx.output / "launcher-0.log").write_bytes(b"start \xff\xfe\n  images/sec: 1.0\nimages/sec: 42.5\n")
    config = RegexConfig(kind="regex", file="launcher-0.log", pattern=r"^images/sec: (?P<images_per_sec>[0-9.]+)")
    assert RegexPostprocessor(config).run(ctx) == {"images_per_sec": 42.5}


def test_regex_missing_file_is_a_postprocess_error(ctx: RunContext) -> None:
    config = RegexConfig(file="worker-9.log", pattern=r"(?P<x>\d+)")
    with pytest.raises(PostprocessError, match="cannot read output/worker-9.log"):
        RegexPostprocessor(config).run(ctx)


@pytest.mark.parametrize("file", ["../result/x", "/etc/passwd", " "])
def test_regex_file_must_stay_in_output(file: str) -> None:
    with pytest.raises(ValueError, match="inside the run's output"):
        RegexConfig(file=file, pattern=r"(?P<x>\d+)")


def test_command_gets_the_kubebench_env_like_the_original_container(ctx: RunContext, write) -> None:
    script = write("post.py", """
        import json, os
        log = open(os.path.join(os.environ["KUBEBENCH_EXP_OUTPUT_PATH"], "worker-0.log")).read()
        value = log.split("total images/sec: ")[1].split()[0]
        with open(os.path.join(os.environ["KUBEBENCH_EXP_RESULT_PATH"], "result.json"), "w") as f:
            json.dump({"total_images/sec": value}, f)
        print("KUBEBENCH_METRIC from_stdout=3")
    """)
    (ctx.output / "worker-0.log").write_text("total images/sec: 99.5\n")
    config = CommandConfig(kind="command", command=f"python {script.name}")
    assert CommandPostprocessor(config).run(ctx) == {"from_stdout": 3.0}
    assert read_result_json(ctx.result / "result.json")[0] == {"total_images/sec": 99.5}


def test_command_failure_names_the_exit_code_and_stderr(ctx: RunContext) -> None:
    config = CommandConfig(command=[sys.executable, "-c", "import sys; sys.exit('cannot parse log')"])
    with pytest.raises(PostprocessError, match="exited 1: cannot parse log"):
        CommandPostprocessor(config).run(ctx)


@pytest.mark.parametrize("python", ["python", "python3"])
def test_command_runs_our_python_in_the_spec_folder_with_the_environment(ctx: RunContext, write, python: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KB_TEST_INHERITED", "yes")
    write("where.py", """
        import os, sys
        print("exe", sys.executable, "cwd", os.getcwd(), "inherited", os.environ.get("KB_TEST_INHERITED"))
        print("run", os.environ["KUBEBENCH_EXP_OUTPUT_PATH"], file=sys.stderr)
        print("KUBEBENCH_METRIC n=1 n=2")
    """)
    assert CommandPostprocessor(CommandConfig(command=[python, "where.py"])).run(ctx) == {"n": 2.0}
    log = (ctx.output / "postprocess.log").read_text()
    assert f"exe {sys.executable} cwd {ctx.workdir} inherited yes\n" in log  # stdout, then stderr
    assert log.endswith(f"run {ctx.output}\n")


def test_command_failures_say_which_command_and_how(ctx: RunContext) -> None:
    noisy = "import sys\nfor i in range(5): print('line', i, file=sys.stderr)\nsys.exit(2)"
    with pytest.raises(PostprocessError) as failed:
        CommandPostprocessor(CommandConfig(command=[sys.executable, "-c", noisy])).run(ctx)
    assert str(failed.value) == f"command {sys.executable} -c {shlex.quote(noisy)} exited 2: line 2 | line 3 | line 4"
    quiet = "print('only stdout'); raise SystemExit(3)"
    with pytest.raises(PostprocessError, match=r" exited 3: only stdout$"):
        CommandPostprocessor(CommandConfig(command=[sys.executable, "-c", quiet])).run(ctx)
    with pytest.raises(PostprocessError, match=r"^command 'kb-no-such-program': No such file or directory$"):
        CommandPostprocessor(CommandConfig(command=["kb-no-such-program"])).run(ctx)
    with pytest.raises(PostprocessError, match=r"^command '.*python[0-9.]*' timed out after 1 s$"):
        CommandPostprocessor(CommandConfig(command=[sys.executable, "-c", "import time; time.sleep(60)"],
                                           timeout="1s")).run(ctx)


def test_python_postprocessor_imports_from_the_spec_folder_first(ctx: RunContext, write, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh module name: an earlier import (another test, the same process) must not hide the path.
    module = f"kbpost_{uuid.uuid4().hex}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{module}.py").write_text("def parse(ctx):\n    return {'from': 1}\n")
    monkeypatch.syspath_prepend(str(elsewhere))  # a module of the same name earlier on the path
    write(f"{module}.py", """
        def parse(ctx):
            return {"from": 2}

        def listy(ctx):
            return [1, 2]

        def two_bad(ctx):
            return {"x": "a", "y": None, "z": 3}
    """)
    assert PythonPostprocessor(PythonConfig(function=f"{module}:parse")).run(ctx) == {"from": 2.0}
    with pytest.raises(PostprocessError) as listy:
        PythonPostprocessor(PythonConfig(function=f"{module}:listy")).run(ctx)
    assert str(listy.value) == f"{module}:listy returned list, expected a mapping"
    with pytest.raises(PostprocessError) as bad:
        PythonPostprocessor(PythonConfig(function=f"{module}:two_bad")).run(ctx)
    assert str(bad.value) == f"{module}:two_bad: values of x, y are not finite numbers"
    sys.modules.pop(module, None)


def test_python_postprocessor_gets_the_context(ctx: RunContext, write) -> None:
    write("mypost.py", """
        def parse(ctx):
            return {"batch": ctx.params["batch_size"] * 2, "repeat": ctx.repeat}

        def broken(ctx):
            raise KeyError("loss")

        def wrong(ctx):
            return {"x": "not a number"}
    """)
    assert PythonPostprocessor(PythonConfig(function="mypost:parse")).run(ctx) == {"batch": 16.0, "repeat": 0.0}
    with pytest.raises(PostprocessError, match="mypost:broken: KeyError"):
        PythonPostprocessor(PythonConfig(function="mypost:broken")).run(ctx)
    with pytest.raises(PostprocessError, match="not finite numbers"):
        PythonPostprocessor(PythonConfig(function="mypost:wrong")).run(ctx)
    with pytest.raises(ValueError, match="module:function"):
        PythonConfig(function="no_colon")


def test_collect_precedence_and_missing_metrics(ctx: RunContext) -> None:
    (ctx.output / "worker-0.log").write_text("KUBEBENCH_METRIC a=1 b=1 c=1\nips 5\n")
    (ctx.result / "result.json").write_text(json.dumps({"c": 3, "note": "hi"}))
    regex = RegexConfig(file="worker-0.log", pattern=r"ips (?P<b>\d+)")
    declared = [MetricSpec(name="a"), MetricSpec(name="z"), MetricSpec(name="opt", required=False)]
    collected = collect(ctx, [regex], declared)
    assert collected.metrics == {"a": 1.0, "b": 5.0, "c": 3.0}
    assert collected.info == {"note": "hi"}
    assert collected.error == "metric 'z' missing from the run's outputs"


def test_collect_reports_a_failed_postprocessor(ctx: RunContext) -> None:
    config = RegexConfig(file="absent.log", pattern=r"(?P<x>\d+)")
    collected = collect(ctx, [config], [])
    assert collected.error == "post-processor 'regex' failed: cannot read output/absent.log: No such file or directory"


def test_steady_state_metrics_from_step_times(ctx: RunContext) -> None:
    import random

    rng = random.Random(1)
    steps = [0.5] * 20 + [0.1 * rng.gauss(1, 0.01) for _ in range(200)]
    (ctx.output / "step_times.json").write_text(json.dumps({"step_seconds": steps, "batch_size": 8, "world_size": 2}))
    collected = collect(ctx, [], [])
    assert abs(collected.metrics["warmup_steps_detected"] - 20) <= 5
    assert collected.metrics["steady_step_time"] == pytest.approx(0.1, rel=0.01)
    assert collected.metrics["steady_items_per_sec"] == pytest.approx(160, rel=0.01)
    assert "drifting" not in collected.info


def test_a_plugin_naming_itself_in_its_error_is_named_once(ctx: RunContext) -> None:
    collected = collect(ctx, [MllogConfig()], [])
    assert collected.error == "post-processor 'mllog' failed: no :::MLLOG lines in any replica log of output/"


class BuggyPostprocessor:
    """A third-party plugin with a bug: it raises something other than PostprocessError."""

    def __init__(self, config: object) -> None:
        pass

    def run(self, ctx: RunContext) -> dict[str, float]:
        raise KeyError("step_times")


def test_a_plugin_s_bug_fails_the_run_naming_the_plugin_and_the_exception(ctx: RunContext, monkeypatch) -> None:
    from kubebench import registry
    from kubebench.spec.base import PluginConfig

    monkeypatch.setitem(registry._BUILTINS["postprocessors"], "buggy", f"{__name__}:BuggyPostprocessor")
    registry.names.cache_clear()
    try:
        collected = collect(ctx, [PluginConfig(kind="buggy")], [])
    finally:
        registry.names.cache_clear()
    assert collected.error == "post-processor 'buggy' failed: KeyError: 'step_times'"


@pytest.mark.parametrize(("fields", "items"), [
    ({"items_per_step": 50, "batch_size": 8, "world_size": 2}, 50),  # the workload's own count wins
    ({"items_per_step": 0.5}, 0.5),
    ({"batch_size": 8}, None),  # half of the stand-in is no stand-in
    ({"world_size": 2}, None),
    ({"items_per_step": 0}, None),
    ({"items_per_step": -4}, None),
])
def test_items_per_step_give_the_steady_rate_only_when_known_and_positive(ctx: RunContext, fields: dict,
                                                                           items: float | None) -> None:
    (ctx.output / "step_times.json").write_text(json.dumps({"step_seconds": [0.1] * 30, **fields}))
    metrics = collect(ctx, [], []).metrics
    assert metrics.get("steady_items_per_sec") == (None if items is None else pytest.approx(items / 0.1))


def test_drift_within_a_run_is_flagged(ctx: RunContext) -> None:
    steps = [0.1 * (1 + 0.2 * i / 200) for i in range(200)]  # throttling: 20% slower by the end
    (ctx.output / "step_times.json").write_text(json.dumps({"step_seconds": steps}))
    collected = collect(ctx, [], [])
    assert collected.metrics["step_time_drift"] > 0.1
    assert collected.info["drifting"].startswith("yes: step time changed by +")


def test_a_malformed_step_file_fails_post_processing(ctx: RunContext) -> None:
    (ctx.output / "step_times.json").write_text(json.dumps({"steps": [1, 2]}))
    assert collect(ctx, [], []).error.startswith("output/step_times.json must hold")


def test_an_info_value_at_the_limit_is_kept_whole_and_a_longer_one_says_how_much_was_cut(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kubebench.collect.metrics import cut

    monkeypatch.setenv("KUBEBENCH_MAX_INFO_CHARS", "4")
    assert cut("abcd") == "abcd"
    assert cut("abcdefg") == "abcd… (3 more characters not kept)"
