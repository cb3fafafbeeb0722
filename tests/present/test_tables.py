"""Terminal presentation helpers: SI numbers, the escape sanitiser, which metrics a table shows."""

from __future__ import annotations

import math

import pytest
from rich.console import Console

from kubebench.present.numbers import metric_unit, short, si
from kubebench.present.tables import choose_metrics, params_split, results_table
from kubebench.present.text import cell, safe, safe_line
from kubebench.store.records import TrialResults


@pytest.mark.parametrize("value, unit, text", [
    (8.943e6, "ops/s", "8.94 M ops/s"),
    (0.0001819, "s", "182 µs"),
    (0.0001819, "", "182 µ"),
    (0.0042, "", "0.00420"),
    (1e-300, "", "1.00e-300"),
    (337211392, "bytes", "322 MiB"),
    (999.7, "", "1.00 k"),
    (12.5, "%", "12.5 %"),
    (1234.5, "ms", "1234 ms"),
    (-931.0, "images/s", "-931 images/s"),
    (9.1, "s", "9.10 s"),
    (0.0, "s", "0 s"),
    (1.7e308, "", "1.70e+308"),
    (float("nan"), "s", "–"),
    (None, "", "–"),
    (math.inf, "", "–"),
])
def test_si_numbers(value, unit: str, text: str) -> None:
    assert si(value, unit) == text


def test_short_numbers_leave_the_unit_to_the_header_unless_it_takes_the_prefix() -> None:
    assert short(8.943e6, "images/s") == "8.94 M"
    assert short(0.000182, "s") == "182 µs" and short(2**30, "bytes") == "1.00 GiB"
    assert metric_unit("memory_peak_bytes") == "bytes" and metric_unit("cpu_percent_max") == "%"
    assert metric_unit("images_per_sec") == "" and metric_unit("step_time_s") == "s" and metric_unit("x", "images/s") == "images/s" and metric_unit("x") == ""


def test_safe_shows_control_characters_and_bidi_overrides_as_escapes() -> None:
    hostile = "a\x1b[31mb\x1b]0;title\x07c\x9bd\u202ee\x7f\tf\ng"
    assert safe(hostile) == "a\\x1b[31mb\\x1b]0;title\\x07c\\x9bd\\u202ee\\x7f\tf\ng"
    assert safe_line(hostile).endswith("\\x7f\\tf\\ng")
    assert safe(None) == "" and safe(3) == "3"
    console = Console(record=True, width=200, color_system=None)
    console.print(cell("[red]not markup[/] \x1b[2J"))
    assert console.export_text() == "[red]not markup[/] \\x1b[2J\n"


def test_declared_metrics_come_first_and_telemetry_only_when_asked() -> None:
    found = ["cpu_percent_max", "cpu_percent_mean", "images_per_sec", "latency_p99", "memory_peak_bytes",
             "samples_per_sec", "server_rss"]
    declared = [{"name": "samples_per_sec", "unit": "samples/s"}, {"name": "latency_p99", "unit": "s"},
                {"name": "images_per_sec", "primary": True}]
    choice = choose_metrics(found, declared, "images_per_sec")
    assert choice.shown == ["images_per_sec", "samples_per_sec", "latency_p99"]  # primary, then spec order
    assert choice.units == {"images_per_sec": "", "samples_per_sec": "samples/s", "latency_p99": "s"}
    assert (choice.hidden, choice.telemetry_hidden) == (["server_rss"], 3)
    with_telemetry = choose_metrics(found, declared, "images_per_sec", telemetry=True)
    assert with_telemetry.shown[3:] == ["cpu_percent_max", "cpu_percent_mean", "memory_peak_bytes"]
    assert with_telemetry.units["memory_peak_bytes"] == "bytes"
    assert choose_metrics(found, [], None).shown == ["images_per_sec", "latency_p99", "samples_per_sec", "server_rss"]
    assert choose_metrics(found, declared, None, chosen=["server_rss"]).shown == ["server_rss"]


def test_fixed_parameters_go_on_one_line_and_a_ci_below_zero_says_n_too_small() -> None:
    assert params_split([{"a": 1, "b": 2}, {"a": 1, "b": 3}, {"a": 1}]) == ({"a": 1}, ["b"])
    trials = [TrialResults(trial_id="t1", params={"workers": 1, "model": "small"}, runs_by_status={"succeeded": 2},
                           metrics=[{"ips": 487.0}, {"ips": 6401.0}]),
              TrialResults(trial_id="t2", params={"workers": 2, "model": "small"}, runs_by_status={"succeeded": 2},
                           metrics=[{"ips": 1000.0}, {"ips": 1010.0}])]
    choice = choose_metrics(["ips"], [{"name": "ips", "unit": "images/s"}], "ips")
    console = Console(record=True, width=80, color_system=None)
    console.print(results_table(trials, choice, "results of e"))
    text = console.export_text()
    assert text.splitlines()[:2] == ["results of e: 2 trials × 2 runs", "fixed: model=small"]
    assert "n too small" in text and "3.44 k" in text and "±6.3%" in text


def test_serving_metrics_hidden_from_the_table_come_in_the_order_people_look_for_them() -> None:
    """Review 2026-12-02 #23: "also measured: arrival_ks_pvalue, arrival_ks_stat, client_lag_max, …"
    (alphabetical) hid ttft_p50, e2e_*, request_throughput, error_rate and requests_measured."""
    found = sorted(["arrival_ks_pvalue", "arrival_ks_stat", "client_lag_max", "client_lag_p50", "e2e_p99", "e2e_mean",
                    "error_rate", "goodput", "itl_p99", "output_tokens_per_s", "request_throughput", "requests_measured",
                    "tpot_p50", "tpot_p99", "ttft_mean", "ttft_p50", "ttft_p99", "zeta"])
    choice = choose_metrics(found, [{"name": "ttft_p99", "unit": "s"}, {"name": "goodput"}], "ttft_p99")
    assert choice.hidden == ["requests_measured", "request_throughput", "output_tokens_per_s", "ttft_mean", "ttft_p50",
                             "tpot_p50", "tpot_p99", "itl_p99", "e2e_mean", "e2e_p99", "error_rate", "zeta",
                             "arrival_ks_pvalue", "arrival_ks_stat", "client_lag_max", "client_lag_p50"]


def test_results_warn_of_unstable_trials_and_count_drifting_runs_with_plurals_and_semicolons() -> None:
    """Review 2026-12-02 #20: CVs of 28% and 21% gave no warning and the `drifting` runs were never
    counted; #21: "1 trials, 1 runs"; #22: one comma between trials and between their parameters."""
    from kubebench.present.tables import results_warnings

    trials = [TrialResults(trial_id=f"t{n}", params={"batch_size": 16 * n, "workers": n}, runs_by_status={"succeeded": 3},
                           metrics=[{"ips": v} for v in values], drifting=n - 1)
              for n, values in ((1, (100.0, 150.0, 70.0)), (2, (200.0, 290.0, 150.0)))]
    warnings = results_warnings(trials, "ips")
    assert warnings[0].startswith("ips: batch_size=16, workers=1: unstable: CV 38% > 10%")
    assert warnings[1].startswith("ips: batch_size=32, workers=2: unstable: CV 33% > 10%")
    assert warnings[-1].startswith("1 of 6 runs drifting: their step time changed within the run")
    console = Console(record=True, width=200, color_system=None)
    one = [TrialResults(trial_id="t", params={"n": 1}, runs_by_status={"succeeded": 1}, metrics=[{"ips": 1.0}])]
    console.print(results_table(one, choose_metrics(["ips"], [{"name": "ips"}], "ips"), "results of e"))
    assert console.export_text().startswith("results of e: 1 trial × 1 run\n")


def test_failure_details_count_in_words() -> None:
    from kubebench.present.failures import failure_details
    from kubebench.store.records import RunRecord

    def failed(i: int, reason: str) -> RunRecord:
        return RunRecord(run_id=f"r{i}", experiment_id="e", trial_id="t", repeat=i, warmup=False, status="failed",
                         params={}, metrics={}, reason=reason, log_tail="boom\n", finished_at=float(i))

    console = Console(record=True, width=200, color_system=None)
    for renderable in failure_details([failed(0, "a"), failed(1, "a")], runs=1):
        console.print(renderable)
    text = console.export_text()
    assert "last 1 line of its log:" in text and "(1 more failed run: `kubebench results e -f json`" in text


def test_a_narrow_results_table_keeps_counts_and_costs_in_each_trial_s_block() -> None:
    trials = [TrialResults(trial_id="t1", params={"workers": 1}, runs_by_status={"succeeded": 2, "failed": 1},
                           metrics=[{"ips": 487.0, "cost_usd": 0.01}, {"ips": 500.0, "cost_usd": 0.012}]),
              TrialResults(trial_id="t2", params={"workers": 2}, runs_by_status={"succeeded": 2},
                           metrics=[{"ips": 1000.0, "cost_usd": 0.02}, {"ips": 1010.0, "cost_usd": 0.022}])]
    choice = choose_metrics(["cost_usd", "ips"], [{"name": "ips", "unit": "images/s"}], "ips")
    console = Console(record=True, width=50, color_system=None)
    console.print(results_table(trials, choice, "results of e"))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert lines[1:5] == ["workers=1  (2 ok, 1 failed)", "  ips    494 images/s  95% CI ±16.7% · cv 1.9%",
                          "  $/run       $0.0110", "workers=2  (2 ok, 0 failed)"]
    assert lines[6] == "  $/run          $0.0210" and max(len(line) for line in lines) <= 50
