"""A trial's history across the experiments of a series (analyse/history.py), in-process: which trials it
shows, the change found and the experiments either side of it, what differs in their labels and environment,
and the errors of ``load_history`` over a SQLite store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kubebench.analyse.history import attach_environments, history, load_history, parse_trials, trial_matches
from kubebench.errors import NotFoundError
from kubebench.store.series_reader import open_series
from kubebench.store.series_records import SeriesData, SeriesExperiment
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

LEVEL = [100.0, 101.0, 99.0, 100.5, 99.5]
EXPERIMENTS = [SeriesExperiment(f"e{i}", 1000.0 + i, {"commit": f"c{i}"}) for i in range(10)]
ENVS = {"e4": {"packages": {"torch": "2.3.0"}}, "e5": {"packages": {"torch": "2.4.1"}}}
STEP_KEY, FLAT_KEY = '{"bs":8}', '{"bs":16}'


def series(environments: dict | None = None, **extra: dict) -> SeriesData:
    """A trial with no runs; bs=8 drops by 20% at e5; bs=16 is flat but missing from e2; ``extra`` params."""
    step = {e.id: [{"ips": v * (0.8 if i >= 5 else 1.0)} for v in LEVEL] for i, e in enumerate(EXPERIMENTS)}
    flat = {e.id: [{"ips": 2 * v} for v in LEVEL] for e in EXPERIMENTS if e.id != "e2"}
    params = {'{"bs":32}': {"bs": 32}, STEP_KEY: {"bs": 8}, FLAT_KEY: {"bs": 16}, **extra}
    return SeriesData("bench", EXPERIMENTS, params, {STEP_KEY: step, FLAT_KEY: flat}, environments or {})


def test_the_step_is_found_between_the_experiments_either_side_with_what_differs_in_their_environment() -> None:
    step, flat = history(series(ENVS), "ips", "maximize")
    assert (step.params, len(step.points), flat.params, len(flat.points)) == ({"bs": 8}, 10, {"bs": 16}, 9)
    assert (step.metric, step.goal, step.threshold) == ("ips", "maximize", 0.02)
    assert flat.changes == () and [p.experiment.id for p in flat.points][2] == "e3"
    [change] = step.changes
    assert (change.point.index, change.before.id, change.after.id) == (5, "e4", "e5")
    assert change.point.comparison.verdict == "regressed" and change.point.comparison.ratio == pytest.approx(0.8)
    assert change.point.comparison.alpha == 0.05  # the default level of the test that confirms a change
    assert change.environment == ("packages.torch: 2.3.0 ≠ 2.4.1",)
    assert change.between() == "commit c4 → c5"


def test_a_trial_s_noise_floor_and_the_level_asked_are_those_the_change_is_judged_by() -> None:
    step, flat = history(series(), "ips", "minimize", thresholds={STEP_KEY: 0.3}, alpha=0.01)
    assert (step.goal, step.threshold, step.changes) == ("minimize", 0.3, ())  # a 20% step within a 30% floor
    assert flat.threshold == 0.02
    [change] = history(series(), "ips", "minimize", trials={"bs": "8"}, alpha=0.01)[0].changes
    assert change.point.comparison.verdict == "improved" and change.point.comparison.alpha == 0.01


def test_an_environment_recorded_on_one_side_only_is_not_compared() -> None:
    [change] = history(series({"e5": ENVS["e5"]}), "ips", "maximize", trials={"bs": "8"})[0].changes
    assert change.environment == ()
    [change] = history(series({"e4": ENVS["e4"]}), "ips", "maximize", trials={"bs": "8"})[0].changes
    assert change.environment == ()


def test_attach_environments_sets_them_only_where_both_sides_have_one() -> None:
    found = history(series(), "ips", "maximize", trials={"bs": "8"})
    assert found[0].changes[0].environment == ()
    [both] = attach_environments(found, ENVS)
    assert both.changes[0].environment == ("packages.torch: 2.3.0 ≠ 2.4.1",)
    assert both.points == found[0].points
    for partial in ({"e4": ENVS["e4"]}, {"e5": ENVS["e5"]}):
        assert attach_environments(found, partial)[0].changes[0].environment == ()


def test_between_names_the_labels_that_differ_and_a_label_one_side_lacks() -> None:
    [change] = history(series(), "ips", "maximize", trials={"bs": "8"})[0].changes
    differing = replace(change, before=SeriesExperiment("e4", 0.0, {"commit": "a", "gpu": "x", "os": "same"}),
                        after=SeriesExperiment("e5", 0.0, {"commit": "b", "driver": "y", "os": "same"}))
    assert differing.between() == "commit a → b, driver — → y, gpu x → —"
    same = replace(change, before=SeriesExperiment("e4", 0.0, {"os": "same"}),
                   after=SeriesExperiment("e5", 0.0, {"os": "same"}))
    assert same.between() == "e4 → e5"


def test_trial_filters_compare_values_as_text_and_every_matching_trial_is_shown() -> None:
    assert trial_matches({"amp": True, "opt": "Adam", "bs": 8}, {"amp": "true", "opt": "Adam", "bs": "8"})
    assert not trial_matches({"amp": False}, {"amp": "true"})
    assert not trial_matches({"opt": "Adam"}, {"opt": "adam"})
    assert not trial_matches({}, {"amp": "none"})
    found = history(series(), "ips", "maximize", trials={"bs": "16"})
    assert [t.params for t in found] == [{"bs": 16}]


def test_parse_trials_splits_at_the_first_equals_sign() -> None:
    assert parse_trials(["opt=a=b", " bs = 8 "]) == {"opt": "a=b", "bs": "8"}
    assert parse_trials(None) == {}


@pytest.fixture
def source(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'kb.db'}"
    store = open_store(url)
    for i in range(3):
        store_experiment(store, f"x{i}", "bench", {"ips": [[100.0, 101.0], [200.0, 201.0]], "latency_ms": [[10.0 + i], [20.0]],
                                                   "unmeasured": [[], []]},
                         params=[{"bs": 8}, {"bs": 16}], created_at=1000.0 + i, goals={"latency_ms": "minimize"})
    store.engine.dispose()
    return open_series(url)


def test_load_history_reads_the_metric_asked_with_its_goal(source) -> None:
    series_name, metric, found = load_history(source, "bench", "latency_ms", {}, None)
    assert (series_name, metric) == ("bench", "latency_ms")
    assert [(t.params, t.goal, [p.values for p in t.points]) for t in found] == [
        ({"bs": 8}, "minimize", [(10.0,), (11.0,), (12.0,)]), ({"bs": 16}, "minimize", [(20.0,)] * 3)]


@pytest.mark.parametrize("metric, trials, since, message", [
    ("unmeasured", {}, None, "series 'bench' has no values of 'unmeasured'"),
    ("ips", {"bs": "3", "amp": "true"}, None, "series 'bench' has no values of 'ips' for trials bs=3, amp=true"),
    ("ips", {}, 5000.0, "series 'bench' has no experiments since then"),
])
def test_load_history_says_what_it_did_not_find(source, metric: str, trials: dict, since: float | None,
                                                message: str) -> None:
    with pytest.raises(NotFoundError) as raised:
        load_history(source, "bench", metric, trials, since)
    assert str(raised.value) == message


def _wobbly_step() -> SeriesData:
    """One trial, 8 experiments: a 4% step at e4, tight runs, a little wobble between experiments."""
    import numpy as np

    rng = np.random.default_rng(3)
    runs = {e.id: [{"ips": v} for v in (lvl * (1 + 0.005 * rng.standard_normal()) * (1 + 0.002 * rng.standard_normal(5)))]
            for e, lvl in zip(EXPERIMENTS, [1000.0] * 4 + [1040.0] * 4)}
    return SeriesData("bench", EXPERIMENTS[:8], {STEP_KEY: {"bs": 8}}, {STEP_KEY: runs}, {})


def test_a_trial_s_a_a_floor_is_pooled_into_its_detection() -> None:
    from kubebench.analyse.changepoint import Floor

    [alone] = history(_wobbly_step(), "ips", "maximize")
    assert [c.point.index for c in alone.changes] == [4]
    # 10 A/A experiments whose medians lay up to 12% apart: the 4% step is within the noise
    [floored] = history(_wobbly_step(), "ips", "maximize", floors={STEP_KEY: Floor(0.12, 10, 50)})
    assert floored.changes == ()
    [other] = history(_wobbly_step(), "ips", "maximize", floors={FLAT_KEY: Floor(0.12, 10, 50)})
    assert [c.point.index for c in other.changes] == [4]  # another trial's floor


def test_load_history_gives_each_trial_its_stored_floor(source, tmp_path: Path, monkeypatch) -> None:
    from kubebench.analyse import history as module
    from kubebench.analyse.changepoint import Floor, detect
    from kubebench.store.series import save_noise_floors
    from kubebench.store.series_records import NoiseFloor

    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")  # the source's store (same tmp_path)
    save_noise_floors(store, "bench", [NoiseFloor('{"bs":8}', "ips", 0.03, 0.01, ("x0", "x1", "x2"), 6)])
    store.engine.dispose()
    given = []

    def spy(points, **options):
        given.append(options["floor"])
        return detect(points, **options)

    monkeypatch.setattr(module, "detect", spy)
    load_history(source, "bench", "ips", {}, None)
    assert given == [Floor(0.03, 3, 6), None]
