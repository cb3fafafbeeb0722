"""Phases in the terminal and the report: names, seconds, the overhead's split, the stacked bar of a
trial's phases and a run's lanes."""

from __future__ import annotations

from kubebench.analyse.startup import PhaseSplit, startup
from kubebench.present.startup import overhead_split, phase_name, seconds
from kubebench.present.timeline_figures import phase_bars, run_timeline, startup_parts
from kubebench.store.records import RunRecord
from kubebench.timeline import COLOURS, Boundary


def test_names_and_seconds() -> None:
    assert phase_name("image_pull_seconds") == "image pull" and phase_name("custom_seconds") == "custom"
    assert [seconds(v) for v in (0.0456, 1.234, 45.6, 600.0)] == ["46 ms", "1.23 s", "45.6 s", "10.0 min"]
    assert seconds(float("nan")) == "–" and seconds(2.2, signed=True) == "+2.20 s" and seconds(-0.4, True) == "−0.40 s"


def test_the_split_in_words() -> None:
    split = PhaseSplit(4.1, (("scheduling_seconds", 2.2), ("image_pull_seconds", 1.5), ("rendezvous_seconds", 0.4),
                             ("train_seconds", 0.01)))
    assert overhead_split(split) == "+4.10 s: scheduling +2.20 s, image pull +1.50 s, rendezvous +0.40 s"
    assert overhead_split(PhaseSplit(0.0, ())) == "+0 ms: no phase differs"


def b(name: str, t: float, replica: str = "") -> Boundary:
    return Boundary(name, t, "observed", 1e-6, replica)


TIMELINE = [b("submitted", 100.0), b("admitted", 101.0), b("scheduled", 101.5, "master-0"),
            b("started", 102.0, "master-0"), b("first_step", 103.0, "master-0"), b("last_step", 105.0, "master-0"),
            b("exited", 105.2, "master-0"), b("collected", 105.3), b("deleted", 105.5)]


def test_a_run_is_drawn_as_lanes_coloured_by_phase() -> None:
    figure = run_timeline(TIMELINE, "a run")
    bars = [(t.y[0], t.name, t.base[0], t.x[0]) for t in figure.data]
    assert ("run", "queue", 0.0, 1.0) in bars and ("run", "teardown", 5.3, 0.2) in [
        (y, n, round(s, 6), round(w, 6)) for y, n, s, w in bars]
    master = [(n, round(s, 6), round(w, 6)) for y, n, s, w in bars if y == "master-0"]
    assert master == [("scheduling", 1.0, 0.5), ("container start", 1.5, 0.5), ("init", 2.0, 1.0),
                      ("train", 3.0, 2.0), ("shutdown", 5.0, 0.2)]
    assert {t.marker.color for t in figure.data if t.name == "train"} == {COLOURS["train_seconds"]}
    assert run_timeline([b("started", 1.0, "w")], "none") is None


def test_the_report_has_a_stacked_bar_per_trial_and_the_runs_timelines() -> None:
    runs = [RunRecord(run_id=f"r{i}", experiment_id="e", trial_id=f"t{i % 2}", repeat=i // 2, warmup=False,
                      status="succeeded", params={"workers": i % 2 + 1},
                      metrics={"queue_seconds": 1.0, "train_seconds": 2.0 + i, "end_to_end_seconds": 5.0 + i})
            for i in range(4)]
    figure = phase_bars(startup(runs), "phases")
    assert [t.name for t in figure.data] == ["queue", "train"] and list(figure.data[1].x) == ["workers=1", "workers=2"]
    assert list(figure.data[1].y) == [3.0, 4.0] and figure.layout.barmode == "stack"
    tables, figures = startup_parts(runs, {"r0": TIMELINE, "r2": TIMELINE})
    assert "Where the time goes" in tables[0] and len(figures) == 2  # the bars, then r0 (r2 is a second repeat)
    assert startup_parts([], {}) == ([], [])
