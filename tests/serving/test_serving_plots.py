"""The serving report: latency and goodput against the load with the SLO drawn, the throughput–
interactivity frontier, and the capacity table of a search."""

from __future__ import annotations

import time

import pytest

from kubebench.present.report import experiment_section, render_report
from kubebench.present.serving import frontier, latency_vs_load, pareto, serving_parts
from kubebench.store.records import ExperimentRecord, RunRecord

SPEC = """
name: s
job: {kind: Serving, command: [x], server: {command: [y]}}
parameters: {batch: [4, 8]}
search: {parameter: rate, low: 1, high: 16, min: 1, max: 1, slo: {ttft_p99: 1s}}
"""


def run(i: int, batch: int, rate: float, ttft: float, rep: int = 0) -> RunRecord:
    tokens = rate * 100 * (1 if batch == 4 else 1.5)
    return RunRecord(run_id=f"r{i}", experiment_id="e", trial_id=f"t{batch}-{rate}", repeat=rep, warmup=False,
                     status="succeeded", params={"batch": batch, "rate": rate},
                     metrics={"ttft_p50": ttft / 2, "ttft_p99": ttft, "tpot_p99": 0.05, "goodput": min(rate, 4.0),
                              "request_throughput": rate, "output_tokens_per_s": tokens,
                              "output_tokens_per_s_per_user": 100.0 / rate})


def runs() -> list[RunRecord]:
    """What a search over a server that saturates past 4 (batch 4) or 8 (batch 8) requests/s ran."""
    from kubebench.capacity.search import Probe, walk
    from kubebench.spec.model import CapacitySearch

    search = CapacitySearch(parameter="rate", low=1, high=16, min=1, max=1, slo={"ttft_p99": 1})
    out: list[RunRecord] = []
    for batch, limit in ((4, 4.0), (8, 8.0)):
        probes: dict[float, Probe] = {}
        while (x := walk(search, probes)[0]) is not None:
            ttft = 0.2 if x <= limit else 3.0
            probes[x] = Probe(x, {"ttft_p99": [ttft]}, 1)
            out.append(run(len(out), batch, x, ttft))
    return out


def record() -> ExperimentRecord:
    now = time.time()
    return ExperimentRecord(id="e", name="s", backend="local", source="s.yaml", spec_text=SPEC, job_fingerprint="f",
                            created_at=now, updated_at=now)


def test_latency_vs_load_draws_each_setting_and_the_slo() -> None:
    figure = latency_vs_load(runs(), "rate", {"ttft_p99": 1.0})
    names = {t.name for t in figure.data}
    assert {"ttft_p99 · batch=4", "ttft_p99 · batch=8", "tpot_p99 · batch=8"} <= names
    trace = next(t for t in figure.data if t.name == "ttft_p99 · batch=4")
    assert list(trace.x) == sorted(trace.x)
    (slo,) = [t for t in figure.data if t.name.startswith("SLO")]
    assert slo.name == "SLO ttft_p99 ≤ 1.00 s" and set(slo.y) == {1.0}  # the values span 0.1 s … 3 s: seconds


def test_legends_name_what_varies_and_the_post_processor_s_slo_is_drawn() -> None:
    """Review 2026-12-02 #3: every legend entry repeated the fixed parameters
    (`ttft_p50 · max_batch=8, duration=4, …`), the axis was in raw seconds; #15: the SLO given to the
    llm-requests post-processor (`ttft=1s,tpot=100ms`) was not drawn."""
    from support import ux_home

    from kubebench.present.serving import capacity_lines, slo_bounds, spec_of

    spec = __import__("yaml").safe_load(ux_home.SERVING_SPEC)
    assert slo_bounds(spec) == {"ttft": 1.0, "tpot": 0.1}
    served = [RunRecord(run_id=f"r{rate}", experiment_id="e", trial_id=f"t{rate}", repeat=0, warmup=False,
                        status="succeeded", metrics=ux_home._serving({"rate": rate}, 0)[1],
                        params={"rate": rate, "max_batch": 8, "duration": 4, "input_tokens": 32, "output_tokens": 32})
                  for rate in (2, 6, 18)]
    figure = latency_vs_load(served, "rate", slo_bounds(spec))
    names = [t.name for t in figure.data]
    assert names[:2] == ["ttft_p50", "ttft_p99"] and not any("max_batch" in n for n in names)
    assert names[-2:] == ["SLO ttft ≤ 1.00 s", "SLO tpot ≤ 100 ms"]
    assert figure.layout.title.subtitle.text == "max_batch=8, duration=4, input_tokens=32, output_tokens=32"
    assert figure.layout.yaxis.title.text.startswith("latency (ms)") and figure.layout.yaxis.type == "log"
    assert figure.data[1].y[0] == pytest.approx(ux_home._serving({"rate": 2}, 0)[1]["ttft_p99"] * 1000)  # in ms
    assert figure.layout.legend.yref == "container" and figure.layout.legend.orientation == "h"  # below, outside
    search = spec_of(record()) | {}
    lines = capacity_lines(search, runs())
    assert lines[0] == "capacity: highest rate with ttft_p99 ≤ 1"
    assert lines[1].startswith("  batch=4: found") and "meets 4.00" in lines[1] and "fails" in lines[1]


def test_frontier_has_a_curve_per_setting_and_the_pareto_front() -> None:
    figure = frontier(runs(), "rate")
    assert [t.name for t in figure.data] == ["batch=4", "batch=8", "frontier"]
    front = figure.data[-1]
    assert all(y > 0 for y in front.y) and list(front.x) == sorted(front.x)


def test_pareto_keeps_only_unbeaten_points() -> None:
    points = [(1, 10), (2, 9), (3, 3), (2, 5), (0.5, 9)]
    assert pareto(points) == [(1, 10), (2, 9), (3, 3)]


def test_the_capacity_table_answers_each_setting() -> None:
    tables, figures = serving_parts(record(), runs())
    (table,) = tables
    assert "capacity: highest rate with ttft_p99 ≤ 1" in table
    assert "<td>batch=4</td><td>found</td>" in table and "<td>batch=8</td><td>found</td>" in table
    assert len(figures) == 3


def test_the_report_of_a_serving_experiment_has_its_plots() -> None:
    section = experiment_section(record(), runs(), "ttft_p99")
    text = render_report([section], "serving")
    assert "throughput vs interactivity" in text and "latency vs rate" in text and "capacity: highest rate" in text


def test_other_experiments_get_no_serving_parts() -> None:
    plain = [RunRecord(run_id="a", experiment_id="e", trial_id="t", repeat=0, warmup=False, status="succeeded",
                       params={"workers": 1}, metrics={"images_per_sec": 10.0})]
    assert serving_parts(record(), plain) == ([], [])


@pytest.mark.parametrize("bad", ["{", "- a list"])
def test_a_spec_text_that_does_not_parse_is_no_search(bad: str) -> None:
    rec = record().model_copy(update={"spec_text": bad})
    tables, _ = serving_parts(rec, runs())
    assert tables == []
