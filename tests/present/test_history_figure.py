"""The history plot draws a few trials at first (those with a change point first); the others are one
click on the legend away, so that a series of 20 trials × 500 experiments plots in a browser at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kubebench.analyse.history import history
from kubebench.present.history import MARKED_POINTS, SHOWN_TRIALS, history_figure
from kubebench.store.series import read_series
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment


def test_trials_with_a_change_are_drawn_and_the_rest_beyond_a_few_wait_in_the_legend(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    rng = np.random.default_rng(2)
    trials = 10
    for i in range(12):
        levels = [100.0 * (0.9 if (t == 8 and i >= 6) else 1.0) for t in range(trials)]  # trial 8 steps down
        store_experiment(store, f"e{i:02d}", "wide", {"ips": [list(v + rng.normal(0, 0.5, 5)) for v in levels]},
                         params=[{"t": t} for t in range(trials)], created_at=1_700_000_000.0 + i)
    histories = history(read_series(store, "wide"), "ips", "maximize")
    assert [h.params["t"] for h in histories if h.changes] == [8]
    figure = history_figure(histories)
    lines = [trace for trace in figure["data"] if trace.get("fill") != "toself"]
    drawn = [trace["name"] for trace in lines if trace["visible"] is True]
    assert len(drawn) == SHOWN_TRIALS and "t=8" in drawn
    assert drawn == [f"t={t}" for t in range(SHOWN_TRIALS - 1)] + ["t=8"]  # the changed trial, then the first ones
    assert {t["visible"] for t in lines if t["name"] not in drawn} == {"legendonly"}
    bands = {t["legendgroup"]: t["visible"] for t in figure["data"] if t.get("fill") == "toself"}
    assert bands == {t["legendgroup"]: t["visible"] for t in lines}  # a trial's CI band goes with its line
    assert len(figure["layout"]["shapes"]) == 1  # the change, marked


def test_a_long_series_is_drawn_as_a_line_and_a_short_one_with_markers(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    rng = np.random.default_rng(3)
    for i in range(MARKED_POINTS + 1):
        values = [list(100 + rng.normal(0, 0.5, 3))]
        store_experiment(store, f"e{i:03d}", "long", {"ips": values}, params=[{}], created_at=1_700_000_000.0 + i)
        if i < 5:
            store_experiment(store, f"s{i:03d}", "short", {"ips": values}, params=[{}], created_at=1_700_000_000.0 + i)
    for series, mode in (("long", "lines"), ("short", "lines+markers")):
        (trial,) = history(read_series(store, series), "ips", "maximize")
        (line,) = [t for t in history_figure([trial])["data"] if t.get("fill") != "toself"]
        assert line["mode"] == mode, series
        assert line["customdata"][-1] == ("e100" if series == "long" else "s004")  # every point still there to click
