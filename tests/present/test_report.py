"""The HTML report: self-contained, and its plots render in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

SPEC = """
name: report-demo
job:
  command: [python, -m, kubebench.workloads.synthetic, noisy, --metric, throughput,
            --mean, "{{ speed * 100 * workers ** 0.8 }}", --noise, 0.03]
parameters:
  workers: [1, 2, 4]
  batch: [8, 16]
  speed: SPEED
repeats: 3
metrics:
  - {name: throughput, primary: true}
"""


@pytest.fixture
def report(home: Path, write, tmp_path: Path) -> Path:
    for exp_id, speed in (("rep-base", 1.0), ("rep-cand", 0.9)):
        spec = write(f"{exp_id}.yaml", SPEC.replace("SPEED", str(speed)))
        assert runner.invoke(app, ["run", str(spec), "--id", exp_id]).exit_code == 0
    path = tmp_path / "report.html"
    result = runner.invoke(app, ["report", "rep-base", "rep-cand", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_report_is_self_contained_and_its_plots_render_in_chromium(report: Path, browser, artifacts: Path) -> None:
    # one test: the two experiments behind the report take a minute to run
    text = report.read_text()
    assert not re.findall(r"<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*[\"']?https?:", text)
    assert "rep-cand compared with rep-base" in text
    assert "olympic mean" in text and "regressed" in text
    assert "History of series report-demo: throughput" in text and "12 points of 6 trial(s)" in text

    page = browser.new_page(viewport={"width": 1200, "height": 900})
    remote = []
    page.route("**/*", lambda route: (remote.append(route.request.url), route.abort())
               if not route.request.url.startswith(("file:", "data:", "blob:")) else route.continue_())
    page.goto(report.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg")
    plots = page.locator(".js-plotly-plot")
    # per experiment: throughput vs workers, vs batch, distributions, scaling (+ telemetry when the runs were
    # long enough to be sampled, which depends on the machine's load); plus the comparison chart and the
    # history of their series (both experiments are report-demo)
    titles = [plots.nth(i).locator(".gtitle").first.text_content() for i in range(plots.count())]
    expected = ["throughput vs workers", "throughput vs batch", "throughput: runs of each trial",
                "scaling efficiency over workers", "phases of each trial (median)"]
    assert [t for t in titles if not t.startswith(("telemetry", "timeline of run"))] == (
        expected * 2 + ["throughput: rep-cand / rep-base", "report-demo: throughput"])
    # where the time goes: the first run of each of the 6 trials of each experiment, drawn as a timeline
    assert sum(t.startswith("timeline of run") and t.endswith("repeat 0)") for t in titles) == 2 * 6
    for i in range(plots.count()):
        plot = plots.nth(i)
        assert plot.locator(".main-svg").count() > 0
        assert plot.locator("g.trace").count() > 0, f"plot {i} has no traces"
    comparison = plots.nth(titles.index("throughput: rep-cand / rep-base"))
    assert comparison.locator("g.trace.scatter g.points path").count() == 6  # a point per matched trial
    assert comparison.locator("text", has_text="±2%").count() == 1  # the band within which a CI is "unchanged"
    assert remote == [], "the report fetched something from the network"
    page.screenshot(path=str(artifacts / "report.png"), full_page=True)
    page.close()


def test_report_of_an_unknown_experiment_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", "nope", "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "no experiment 'nope'" in result.output


def test_report_shows_the_cost_of_each_trial_and_of_the_candidate_against_the_base(home: Path, tmp_path: Path) -> None:
    from support.costs import priced_experiment

    from kubebench.settings import settings
    from kubebench.store.store import open_store

    store = open_store(settings(None).store_url)
    priced_experiment(store, "priced-base")
    priced_experiment(store, "priced-cand", speed=2.0)
    priced_experiment(store, "unpriced", priced=False)
    path = tmp_path / "cost.html"
    assert runner.invoke(app, ["report", "priced-base", "priced-cand", "-o", str(path)]).exit_code == 0
    text = path.read_text()
    assert text.count("<h3>cost (median)</h3>") == 2  # one table per experiment
    cells = re.findall(r"<tr><td>batch=(\d+)</td><td>3</td><td>([^<]*)</td><td>([^<]*)</td></tr>", text)
    assert cells == [("8", "$0.0110", "$0.100"), ("16", "$0.0220", "$0.0500"),  # the base
                     ("8", "$0.00550", "$0.0500"), ("16", "$0.0110", "$0.0250")]  # twice as fast
    assert "<th>$/run</th><th>$/M tokens</th>" in text
    assert "median cost per run: base $0.0160, candidate $0.00800 · $/M tokens candidate/base: 0.500" in text
    assert runner.invoke(app, ["report", "unpriced", "-o", str(path)]).exit_code == 0
    assert "cost (median)" not in path.read_text() and "median cost" not in path.read_text()


def test_the_report_gives_the_description_and_names_trials_by_what_varies(tmp_path: Path) -> None:
    """Review 2026-12-02 #30: no spec description; legends and category labels repeated the fixed
    parameters (`workers=1, threads=1, steps=10`); cells of one value read `– … –`."""
    from support import ux_home

    from kubebench.present.report import experiment_section
    from kubebench.store.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    spec = "description: CNN images/s at 1 and 2 workers.\n" + ux_home.CNN_SPEC.replace("repeats: 2", "repeats: 1")
    ux_home.record(store, "one-1", spec, lambda p, r: ("succeeded", {"images_per_sec": 1000.0 * p["workers"],
                                                                       "step_time_p50": 0.03}))
    section = experiment_section(store.experiment("one-1"), store.runs("one-1"), None)
    tables = "".join(section.tables)
    assert "<p class='description'>CNN images/s at 1 and 2 workers.</p>" in tables
    assert "– … –" not in tables and "threads=1, steps=10" in tables  # once, as the fixed parameters
    names = [trace.name for figure in section.figures for trace in figure.data]
    box_names = [t.name for f in section.figures for t in f.data if t.type == "box"]
    assert box_names == ["workers=1, batch_size=16", "workers=1, batch_size=32", "workers=2, batch_size=16",
                         "workers=2, batch_size=32"]
    assert not any("threads" in str(n) or "steps" in str(n) for n in names)
