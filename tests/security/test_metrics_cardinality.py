"""N8 (review of 2026-12-02): ``/metrics`` (no token) puts no spec text in a label and has a bound on its
series. One run of a spec with a 100 KB parameter and 990 metrics made every scrape 99 MB: a
``params`` label of 100 KB on each of 990 series."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from kubebench.monitor import exposition
from kubebench.monitor.exposition import make_registry
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

LONG_NAME = "m_" + "y" * 5000  # a workload chooses its metric names


def card(store, exp_id: str, metrics: int = 990) -> None:
    values = {f"m{i:03d}": [[float(i)]] for i in range(metrics)}
    values[LONG_NAME] = [[1.0]]
    store_experiment(store, exp_id, "card", values, params=[{"p": "x" * 100_000}])


def scrape(store) -> tuple[str, list[tuple[str, dict[str, str]]]]:
    text = generate_latest(make_registry(store)).decode()
    series = [(m.group(1), dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2))))
              for m in re.finditer(r"^(\w+)\{(.*)\} \S+$", text, re.M)]
    return text, series


def test_no_spec_text_in_a_label_and_every_label_bounded(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    card(store, "card-1")
    text, series = scrape(store)
    assert len(text) < 500_000, len(text)  # was 99 MB
    assert "xxxxxxxxxx" not in text
    assert all(len(v) <= exposition.LABEL_CHARS for _, labels in series for v in labels.values())
    metrics = [labels for name, labels in series if name == "kubebench_metric"]
    assert all(set(m) == {"experiment", "trial", "metric"} for m in metrics)
    long = [m["metric"] for m in metrics if m["metric"].startswith("m_yyy")]
    assert len(long) == 1 and long[0].endswith(f"…{hashlib.sha256(LONG_NAME.encode()).hexdigest()[:16]}")


def test_the_series_of_an_experiment_and_of_a_scrape_are_bounded(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert (exposition.SERIES_PER_EXPERIMENT, exposition.SERIES) == (1_000, 10_000)  # as docs/monitoring.md says
    monkeypatch.setattr(exposition, "SERIES_PER_EXPERIMENT", 100)  # the same rules, on a smaller store
    monkeypatch.setattr(exposition, "SERIES", 150)
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    card(store, "big-1", metrics=120)  # 121 metrics in one trial: the first 100 are exposed
    text, series = scrape(store)
    shown = [labels["metric"] for name, labels in series if name == "kubebench_metric"]
    assert len(shown) == 100 and shown[:2] == ["m000", "m001"]  # declared metrics first, in the spec's order
    assert [labels for name, labels in series if name == "kubebench_metric_series_dropped"] == [{"experiment": "big-1"}]
    assert 'kubebench_metric_series_dropped{experiment="big-1"} 21.0' in text
    card(store, "big-2", metrics=90)
    _, series = scrape(store)
    per_experiment: dict[str, int] = {}
    for name, labels in series:
        if name == "kubebench_metric":
            per_experiment[labels["experiment"]] = per_experiment.get(labels["experiment"], 0) + 1
    assert per_experiment == {"big-2": 91, "big-1": 59}  # newest first, 150 in all
