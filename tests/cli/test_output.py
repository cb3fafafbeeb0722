"""What the CLI prints: read at 80 and 120 columns, no terminal escapes from names, parameters,
reasons or metric keys, help and version, `--set` checks, failed runs explained, ISO times."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

WIDTHS = (80, 120)


def invoke(*args: str, columns: int = 120):
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(app, list(args))


# --- escape sequences of workload or user origin ---------------------------------------------------

WORK = """
import json, os, sys
mode = sys.argv[1]
result = os.environ["KUBEBENCH_EXP_RESULT_PATH"]
os.makedirs(result, exist_ok=True)
with open(os.path.join(result, "result.json"), "w") as f:
    json.dump({"\\x1b[32mkey\\x1b]0;TITLE-FROM-KEY\\x07": 1.5, "score": 2.0}, f)
if mode == "crash":
    import tensorflow_not_installed  # noqa: F401  (the run fails as a missing TensorFlow does)
"""

HOOK = """
def check(ctx):
    if ctx.params["mode"] == "bad":
        raise ValueError("bad \\x1b]0;TITLE-FROM-REASON\\x07\\x1b[41mREDBG\\x1b[0m \\u202eevil")
    return {}
"""

EVIL = r"""
name: "evil\e[31mRED\e[0m\e]0;TITLE-FROM-NAME\a"
job:
  command: [python, work.py, "{{ mode }}"]
parameters:
  mode: [ok, bad, crash]
  label: "x\e[2J\e]52;c;ZXZpbA==\a[red]y"
repeats: 1
metrics:
  - {name: score, primary: true}
postprocess:
  - {kind: python, function: "evilhook_output:check"}
"""


@pytest.fixture
def evil(home: Path, write) -> str:
    write("work.py", WORK)
    write("evilhook_output.py", HOOK)
    result = invoke("run", str(write("evil.yaml", EVIL)), "--id", "evil-exp")
    assert result.exit_code == 1, result.output  # two of the three runs fail, by design
    assert "\x1b" not in result.output and "\\x1b[2J" in result.output  # the progress lines too
    return "evil-exp"


def test_escape_sequences_are_shown_never_sent_to_the_terminal(evil: str) -> None:
    outputs = {
        "show": invoke("show", evil, columns=300),
        "experiments": invoke("experiments"),
        "results": invoke("results", evil),
        "results -m key": invoke("results", evil, "-m", "\x1b[32mkey\x1b]0;TITLE-FROM-KEY\x07"),
        "compare": invoke("compare", evil, evil),
        "bad metric": invoke("compare", evil, evil, "-m", "\x1b[5mnope"),
    }
    for what, result in outputs.items():
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", result.output), what
    show = outputs["show"].output
    assert "evil\\x1b[31mRED\\x1b[0m\\x1b]0;TITLE-FROM-NAME\\x07" in show  # the name
    assert "label=x\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07[red]y" in show  # a parameter, markup kept as text
    assert "ValueError: bad \\x1b]0;TITLE-FROM-REASON\\x07\\x1b[41mREDBG\\x1b[0m \\u202eevil" in show  # a reason
    # A result.json key outside the metric-name rule is kept as info, never a metric (docs/limits.md):
    # asking for it is a usage error, and the message shows the key escaped.
    by_key = outputs["results -m key"]
    assert by_key.exit_code == 2 and "\\x1b[32mkey\\x1b]0;TITLE-FROM-KEY\\x07" in by_key.output
    assert "TITLE-FROM-NAME" in outputs["experiments"].output.replace("\n", "").replace(" ", "")
    assert outputs["bad metric"].exit_code == 2 and "'\\x1b[5mnope'" in outputs["bad metric"].output


def test_show_explains_failed_runs_with_the_end_of_their_log(evil: str) -> None:
    shown = invoke("show", evil, columns=200)
    assert shown.exit_code == 0, shown.output
    assert "worker-0 exited with code 1" in shown.output
    assert "ModuleNotFoundError: No module named 'tensorflow_not_installed'" in shown.output
    runs = json.loads(invoke("results", evil, "-f", "json").output)
    crashed = next(r for r in runs if r["params"]["mode"] == "crash")
    assert f"failed run {crashed['run_id']} (repeat 0)" in shown.output


def test_show_lists_the_metrics_a_run_reported_when_a_declared_one_is_missing(home: Path, write) -> None:
    spec = write("miss.yaml", """
        name: miss
        job: {command: [python, -c, "import kubebench; kubebench.report(throughput=3.0, loss=0.5)"]}
        repeats: 1
        metrics: [{name: images_per_sec}]
    """)
    assert invoke("run", str(spec), "--id", "miss").exit_code == 1
    shown = invoke("show", "miss", columns=200).output
    assert "metric 'images_per_sec' missing from the run's outputs" in shown
    assert "metrics it reported: loss, throughput" in shown


# --- tables at 80 and 120 columns ---------------------------------------------------------------------

WIDE = """
name: wide
job:
  command: [python, -c, "import kubebench; kubebench.report(images_per_sec=8.94e6 * {{ workers }} * (1 + 0.01 * {{ r }}), step_time_p50=0.000182, latency_p99=0.0021, extra_metric=3, cpu_percent_max=99)"]
parameters:
  batch_size: [16, 32]
  workers: [1, 2]
  r: 1
  model: resnet50-with-a-long-name
  dataset: imagenet-synthetic
  precision: fp32
repeats: 2
metrics:
  - {name: step_time_p50, unit: s, goal: minimize}
  - {name: images_per_sec, unit: images/s, primary: true}
  - {name: latency_p99, unit: s, goal: minimize}
"""


@pytest.fixture
def wide(home: Path, write) -> str:
    assert invoke("run", str(write("wide.yaml", WIDE)), "--id", "wide-experiment-20261130-abcd").exit_code == 0
    assert invoke("run", str(write("wide2.yaml", WIDE.replace("r: 1", "r: 2"))),
                  "--id", "wide-experiment-20261130-efgh").exit_code == 0
    return "wide-experiment-20261130-abcd"


@pytest.mark.parametrize("columns", WIDTHS)
def test_tables_fit_the_terminal_with_ids_whole_and_numbers_readable(wide: str, columns: int) -> None:
    other = "wide-experiment-20261130-efgh"
    for args in (["results", wide], ["show", wide], ["experiments"], ["compare", wide, other],
                 ["scaling", wide], ["run", "--help"], ["--help"]):
        result = invoke(*args, columns=columns)
        assert result.exit_code == 0, (args, result.output)
        too_long = [line for line in result.output.splitlines() if len(line) > columns]
        assert not too_long, (args, too_long)
        if "--help" not in args:
            assert "…" not in result.output.replace(" … ", ""), (args, result.output)  # nothing cut
    listing = invoke("experiments", columns=columns).output
    assert wide in listing and other in listing
    results = invoke("results", wide, columns=columns).output
    assert "fixed: r=1, model=resnet50-with-a-long-name, dataset=imagenet-synthetic, precision=fp32" in \
        results.replace("\n", " ").replace("  ", " ")
    header = results.split("───")[0]
    # the primary metric first, then the other declared ones in the spec's order, with units; no telemetry
    assert header.index("images_per_sec") < header.index("step_time_p50") < header.index("latency_p99")
    assert "images/s" in header and "cpu_percent_max" not in results and "e+0" not in results
    assert "9.03 M" in results and "18.1 M" in results and "182 µs" in results and "2.10 ms" in results
    assert "±0.0%" in results  # the CI of the mean, relative
    # how many telemetry metrics a run has depends on how long it ran (samples): only that they are counted
    assert re.search(r"also measured: extra_metric \(--metric NAME\); \d+ telemetry metrics? \(--telemetry\); "
                     r"\d+ phases \(kubebench startup ID\)", " ".join(results.split()))
    assert "cpu_percent_max" in invoke("results", wide, "--telemetry", columns=200).output
    compared = invoke("compare", wide, other, columns=columns).output
    assert "base: r=1 · candidate: r=2" in compared.replace("\n", " ")


# --- help, version, --set -------------------------------------------------------------------------------


def test_version_and_short_help() -> None:
    from kubebench import __version__

    assert invoke("--version").output == f"kubebench {__version__}\n"
    assert invoke("-h").exit_code == 0 and "Commands:" in invoke("-h").output
    for command in ("run", "render", "results", "show", "experiments", "compare", "scaling", "overhead", "report"):
        result = invoke(command, "-h", columns=80)
        assert result.exit_code == 0, command
        assert "kubebench " + command in result.output, f"{command} -h has no example"
    commands = invoke("--help", columns=80).output.split("Commands:")[1]
    assert "..." not in commands and "…" not in commands
    assert "then print its results per trial." in " ".join(commands.split())


SMALL = """
name: small
job: {command: [python, -c, "import kubebench; kubebench.report(v={{ n }})"]}
parameters: {n: [1, 2], tag: a}
repeats: 1
"""


def test_set_must_name_a_parameter_of_the_spec(home: Path, write) -> None:
    spec = str(write("small.yaml", SMALL))
    for key, hint in (("nn=5", ""), ("repeats=2", "; to change repeats, use --repeats")):
        result = invoke("run", spec, "--set", key, "--dry-run")
        assert result.exit_code == 2, result.output
        name = key.split("=")[0]
        assert f"--set '{key}': '{name}' is not a parameter of {spec}; parameters: n, tag{hint}" in \
            result.output.replace("\n", "")
    assert invoke("render", spec, "--set", "nn=5").exit_code == 2
    empty = invoke("run", spec, "--set", "tag=", "--dry-run")
    assert empty.exit_code == 0
    assert "warning: --set tag=: empty value; tag is set to the empty string ''" in empty.output
    assert "warning" not in invoke("run", spec, "--set", "tag=b", "--dry-run").output


# --- machine-readable times ---------------------------------------------------------------------------


def test_json_and_csv_times_are_iso_8601(home: Path, write) -> None:
    assert invoke("run", str(write("small.yaml", SMALL)), "--id", "iso").exit_code == 0
    iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")
    listed = json.loads(invoke("experiments", "-f", "json").output)[0]
    assert iso.match(listed["created_at"]) and isinstance(listed["created_at_epoch"], float)
    row = next(csv.DictReader(io.StringIO(invoke("experiments", "-f", "csv").output)))
    assert iso.match(row["created_at"]) and iso.match(row["updated_at"])
    run = json.loads(invoke("results", "iso", "-f", "json").output)[0]
    assert iso.match(run["started_at"]) and iso.match(run["finished_at"]) and run["repeat"] == 0
    assert run["finished_at_epoch"] - run["started_at_epoch"] == pytest.approx(run["duration_s"])
    first = next(csv.DictReader(io.StringIO(invoke("results", "iso", "-f", "csv").output)))
    assert iso.match(first["started_at"]) and first["repeat"] == "0"


def test_an_empty_store_says_which_store_it_is(home: Path) -> None:
    result = invoke("experiments")
    assert result.exit_code == 0
    assert result.output.startswith(f"no experiments in sqlite:///{home}/kubebench.db")
