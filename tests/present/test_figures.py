"""Report figures: telemetry of short runs is visible (B5), CIs never go below zero for a throughput,
the comparison chart shows the ±threshold band."""

from __future__ import annotations

import pytest

from kubebench.analyse.experiments import compare_experiments
from kubebench.monitor.plots import telemetry_figure
from kubebench.present.figures import comparison_chart, metric_vs_parameter
from kubebench.store.records import RunRecord


def test_a_run_with_one_telemetry_sample_is_drawn_as_a_marker() -> None:
    by_run = {
        "r1": {"cpu_percent": [(10.0, 50.0)], "memory_bytes": [(10.0, 2.0**20)]},  # one sample: a short run
        "r2": {"cpu_percent": [(0.0, 90.0), (1.0, 95.0), (2.0, 99.0)]},
        "r3": {"system_cpu_percent": [(0.0, 5.0)]},  # no series of its own processes: not plotted
    }
    figure = telemetry_figure(by_run, "telemetry of the first {n} runs", {"r1": "n=1 · repeat 0"})
    traces = figure.data
    assert [(t.name, len(t.x)) for t in traces] == [("n=1 · repeat 0", 1), ("n=1 · repeat 0", 1), ("r2", 3)]
    assert all("markers" in t.mode for t in traces if len(t.x) == 1)
    assert [t.showlegend for t in traces] == [True, False, True]  # one legend entry per run
    assert figure.layout.title.text == "telemetry of the first 2 runs"


def run(trial: str, repeat: int, workers: int, value: float, experiment: str = "e") -> RunRecord:
    return RunRecord(run_id=f"{experiment}{trial}{repeat}", experiment_id=experiment, trial_id=trial, repeat=repeat,
                     warmup=False, status="succeeded", params={"workers": workers}, metrics={"ips": value})


def test_a_throughput_whose_ci_reaches_below_zero_gets_no_bar_but_an_open_point() -> None:
    """Review 2026-12-02 #12: "n too small" trials were drawn as whiskers from 0 to 5000 around values
    of about 1000, which set the axis; the axis title ran into the chart's title."""
    runs = [run("a", 0, 1, 487.0), run("a", 1, 1, 6401.0), run("b", 0, 2, 1000.0), run("b", 1, 2, 1010.0)]
    figure = metric_vs_parameter(runs, "ips", "workers", "ips vs workers", "images/s")
    (trace,) = figure.data
    assert trace.error_y.array[0] is None and trace.error_y.arrayminus[0] is None  # n too small: no bar
    assert trace.error_y.array[1] > 0 and list(trace.marker.symbol) == ["circle-open", "circle"]
    assert figure.layout.yaxis.title.text == "ips (images/s)"  # short: the caveat is the subtitle
    assert figure.layout.title.subtitle.text == "mean ± 95% CI of the runs; open points: n too small for a CI"
    assert figure.layout.yaxis.tickformat == "~s"  # 3k, not 3000


def test_the_comparison_chart_shows_the_band_within_which_a_ci_is_unchanged() -> None:
    base = [run(t, r, w, 100.0 * w + r) for t, w in (("a", 1), ("b", 2)) for r in range(4)]
    candidate = [run(t, r, w, 100.0 * w + r, "c") for t, w in (("a", 1),) for r in range(4)]
    rows = compare_experiments(base, candidate, "ips", "maximize")
    figure = comparison_chart(rows, "ips: c / e", 0.02)
    (shape,) = figure.layout.shapes[:1]
    assert (shape.y0, shape.y1) == pytest.approx((0.98, 1.02))
    assert list(figure.data[0].text) == ["unchanged", "missing"]
