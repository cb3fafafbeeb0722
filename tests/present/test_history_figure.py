"""The history plot draws a few trials at first (those with a change point first); the others are one
click on the legend away, so that a series of 20 trials × 500 experiments plots in a browser at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kubebench.analyse.history import history
from kubebench.present.history import SHOWN_TRIALS, history_figure
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
    lines = [trace for trace in figure["data"] if trace.get("mode") == "lines+markers"]
    drawn = [trace["name"] for trace in lines if trace["visible"] is True]
    assert len(drawn) == SHOWN_TRIALS and "t=8" in drawn
    assert drawn == [f"t={t}" for t in range(SHOWN_TRIALS - 1)] + ["t=8"]  # the changed trial, then the first ones
    assert {t["visible"] for t in lines if t["name"] not in drawn} == {"legendonly"}
    bands = {t["legendgroup"]: t["visible"] for t in figure["data"] if t.get("fill") == "toself"}
    assert bands == {t["legendgroup"]: t["visible"] for t in lines}  # a trial's CI band goes with its line
    assert len(figure["layout"]["shapes"]) == 1  # the change, marked
