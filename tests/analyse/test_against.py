"""What `run --decide-against` decides against (read from a store), and how decisions are stored and
read back: by the store, by the sqlite3 reader, and gone with their experiment."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubebench.analyse.against import base_values, level_experiments, read_against
from kubebench.errors import NotFoundError, SpecError
from kubebench.numerics.sequential import Design
from kubebench.plan.plan import make_plan
from kubebench.runner import decision_record
from kubebench.spec.model import BenchmarkSpec
from kubebench.store.reader import SqliteReader, open_results
from kubebench.store.series import accept_change
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

DESIGN = Design(3, 8)


def spec(**fields) -> BenchmarkSpec:
    return BenchmarkSpec.model_validate({"name": "bench", "job": {"command": ["true"]},
                                         "parameters": {"bs": [8, 16], "version": "2"},
                                         "metrics": [{"name": "ips", "primary": True}], **fields})


@pytest.fixture
def store(tmp_path: Path):
    opened = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    for i, level in enumerate((100.0, 100.0, 90.0, 90.0)):  # a step down at e2, accepted below
        store_experiment(opened, f"e{i}", "bench", {"ips": [[level, level + 1, level - 1], [200.0, 201.0]]},
                         params=[{"bs": 8, "version": "1"}, {"bs": 16, "version": "1"}],
                         created_at=1_700_000_000.0 + i)
    yield opened
    opened.engine.dispose()


def test_an_experiment_base_gives_each_planned_trial_its_values(store) -> None:
    plan = make_plan(spec(), "cand", "f", 3)
    against = read_against(store, "e0", spec(), plan, DESIGN)
    assert (against.text, against.experiments, against.metric, against.goal) == ("experiment e0", ("e0",), "ips",
                                                                                  "maximize")
    by_bs = {t.params["bs"]: against.base[t.id] for t in plan.trials}  # version differs: it is what is compared
    assert by_bs == {8: (100.0, 101.0, 99.0), 16: (200.0, 201.0)}


def test_the_series_level_starts_at_its_last_accepted_change(store) -> None:
    plan = make_plan(spec(), "cand", "f", 3)
    assert level_experiments(store, "bench", "ips") == ["e0", "e1", "e2", "e3"]
    accept_change(store, "bench", "e2", metric="ips", note="new model")
    assert level_experiments(store, "bench", "ips") == ["e2", "e3"]
    assert level_experiments(store, "bench", "other_metric") == ["e0", "e1", "e2", "e3"]  # it accepted ips only
    against = read_against(store, "series", spec(), plan, DESIGN)
    assert against.text == "series bench (2 experiments since its last accepted change)"
    assert {t.params["bs"]: against.base[t.id] for t in plan.trials}[8] == (90.0, 91.0, 89.0) * 2
    assert level_experiments(store, "bench", "ips", exclude="e3") == ["e2"]  # a resumed candidate is not its own base


def test_what_cannot_be_decided_against_is_a_clear_error(store) -> None:
    plan = make_plan(spec(), "cand", "f", 3)
    with pytest.raises(SpecError, match="declare `metrics:`"):
        read_against(store, "e0", spec(metrics=[]), plan, DESIGN)
    with pytest.raises(NotFoundError, match="nope"):
        read_against(store, "nope", spec(), plan, DESIGN)
    with pytest.raises(SpecError, match="has no experiment to decide against yet"):
        read_against(store, "series", spec(name="fresh"), plan, DESIGN)
    with pytest.raises(SpecError, match="that is this experiment"):
        read_against(store, "e0", spec(), make_plan(spec(), "e0", "f", 3), DESIGN)
    other = spec(parameters={"bs": [32, 64]})
    with pytest.raises(SpecError, match="no succeeded run with 'ips' for any trial"):
        read_against(store, "e0", other, make_plan(other, "cand", "f", 3), DESIGN)


def test_trials_match_on_the_parameters_that_vary() -> None:
    plan = make_plan(spec(), "cand", "f", 3)
    runs = {"b": [({"bs": 8, "version": "1"}, [{"ips": 1.0}, {"ips": 2.0}, {"x": 3.0}])]}
    assert sorted(base_values(runs, plan, "ips").values()) == [(), (1.0, 2.0)]


def test_decisions_are_stored_read_by_both_readers_and_deleted_with_their_experiment(store, tmp_path) -> None:
    from kubebench.numerics.sequential import decide

    plan = make_plan(spec(), "cand", "f", 3)
    store_experiment(store, "cand", "bench", {"ips": [[90.0, 90.5, 89.5], [200.0, 201.0, 199.0]]},
                     params=[{"bs": 8, "version": "2"}, {"bs": 16, "version": "2"}], created_at=time.time())
    against = read_against(store, "e0", spec(), plan, DESIGN)
    trials = {t.params["bs"]: t for t in plan.trials}
    stored = {r.params["bs"]: r.trial_id for r in store.runs("cand")}
    records = [decision_record("cand", stored[bs], against,
                               decide(against.base[trials[bs].id], values, DESIGN, "maximize"))
               for bs, values in ((8, [90.0, 90.5, 89.5]), (16, [200.0, 201.0, 199.0]))]
    store.record_decisions(records)
    store.record_decisions(records[:1])  # again (a resume): replaced, not doubled
    found = store.decisions("cand")
    assert [(d.params["bs"], d.verdict, d.runs, d.max_runs, d.sequential) for d in found] == [
        (8, "regressed", 3, 8, True), (16, "unchanged", 3, 8, True)]
    assert found[0].change == pytest.approx(-0.1, abs=0.003) and found[0].ci_high < 1
    reader = open_results(f"sqlite:///{tmp_path / 'kb.db'}")
    assert isinstance(reader, SqliteReader) and reader.decisions("cand") == found
    assert store.decisions("e0") == []
    store.delete_experiment("cand")
    with pytest.raises(NotFoundError):
        store.decisions("cand")
