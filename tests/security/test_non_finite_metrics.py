"""N7 (review 2026-12-02): derived metrics could be ``inf`` (cost and energy per item at a subnormal
throughput, an interop rate over a subnormal duration). SQLite stored ``Infinity`` and the JSON export
was no JSON; PostgreSQL refused the row, the runner stopped, and every resume stopped at the same run.
Now no value that is not finite is stored: derived ones are left out and named in the run's info, the
store's own guard records a run failed naming the metric, and exports write ``null``."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.accounting import REFUSED_KEY, account
from kubebench.cli import app
from kubebench.errors import SpecError
from kubebench.plan.plan import make_plan
from kubebench.present.export import to_json
from kubebench.spec.efficiency import Prices, load_prices
from kubebench.spec.model import BenchmarkSpec
from kubebench.store.records import ExperimentRecord, RunResult
from kubebench.store.store import open_store

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'kb.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    opened = open_store(url)
    yield opened
    opened.engine.dispose()


def _begin(store) -> list[str]:
    spec = BenchmarkSpec.model_validate({"name": "s", "job": {"command": ["true"]}, "repeats": 2})
    plan = make_plan(spec, "inf-1", "f")
    now = time.time()
    store.begin_experiment(ExperimentRecord(id="inf-1", name="s", backend="local", source="s", spec_text="name: s",
                                            job_fingerprint="f", created_at=now, updated_at=now), plan)
    return [r.id for r in plan.runs]


def strict_json(text: str):
    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_the_store_records_a_run_with_an_inf_metric_failed_and_goes_on(store) -> None:
    first, second = _begin(store)
    store.start_run(first, "/r")
    store.finish_run(RunResult(run_id=first, status="succeeded", finished_at=time.time(),
                               metrics={"cost_usd": math.inf, "x": 1.0, "y": math.nan},
                               provenance={"clock": math.inf}))
    run = store.run(first)
    assert run.status == "failed" and run.metrics == {}
    assert "not finite numbers refused: cost_usd=inf, y=nan" in run.reason
    store.start_run(second, "/r2")  # the store still takes writes: the next run, a resume, go on
    store.finish_run(RunResult(run_id=second, status="succeeded", finished_at=time.time(), metrics={"x": 2.0}))
    assert store.run(second).status == "succeeded"
    strict_json(to_json(store.runs("inf-1")))


def test_the_json_export_writes_null_for_what_an_old_store_holds() -> None:
    from kubebench.store.records import RunRecord

    old = RunRecord(run_id="r", experiment_id="e", trial_id="t", repeat=0, warmup=False, status="succeeded",
                    params={}, metrics={"cost_usd": math.inf, "x": math.nan, "ok": 1.5})
    assert strict_json(to_json([old]))[0]["metrics"] == {"cost_usd": None, "x": None, "ok": 1.5}


def test_derived_metrics_that_are_not_finite_are_left_out_and_named(tmp_path: Path) -> None:
    spec = BenchmarkSpec.model_validate({"name": "s", "job": {"command": ["true"]}})
    result = RunResult(run_id="r", status="succeeded", finished_at=1.0,
                       metrics={"images_per_sec": 5e-324, "tokens_per_sec": 2.0, "energy_joules": 1.7e308})
    done = account(spec, tmp_path, {}, result, seconds=2.0, machine_local=False)
    assert all(math.isfinite(v) for v in done.metrics.values())
    assert "joules_per_image" not in done.metrics and done.metrics["joules_per_token"] > 0
    assert done.info[REFUSED_KEY].startswith("joules_per_image=inf")


def test_a_price_no_cost_can_be_computed_from_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("cpu_core_hour: 1e308\n")
    with pytest.raises(SpecError, match="a price must be a number of USD from 0 to 1e.06, got 1e.308"):
        load_prices(Prices(file="p.yaml"), tmp_path)


SPEC = """
name: costinf
job:
  command: [python, -c, "print('KUBEBENCH_METRIC tokens_per_sec={{ t }} images_per_sec=5e-324 energy_joules=1.7e308')"]
parameters:
  t: [1e-300, 1.0]
prices:
  cpu_core_hour: 1.0
telemetry: {enabled: false}
metrics: [{name: tokens_per_sec, primary: true}]
"""


def test_a_sweep_of_inf_derived_metrics_on_postgresql_runs_to_the_end(postgres_url: str, home: Path, write) -> None:
    """The review's `pginf.py`: every attempt stopped at "invalid input syntax for type json"."""
    spec = write("cost_inf.yaml", SPEC)
    done = runner.invoke(app, ["run", str(spec), "--id", "pginf-1", "--store", postgres_url])
    assert done.exit_code == 0, done.output
    store = open_store(postgres_url)
    runs = store.runs("pginf-1")
    store.engine.dispose()
    assert [r.status for r in runs] == ["succeeded", "succeeded"]
    assert all(math.isfinite(v) for r in runs for v in r.metrics.values())
    assert "joules_per_image=inf" in runs[0].info[REFUSED_KEY]
    exported = runner.invoke(app, ["results", "pginf-1", "-f", "json", "--store", postgres_url])
    assert exported.exit_code == 0 and len(strict_json(exported.output)) == 2


def test_telemetry_samples_that_are_not_finite_are_left_out(store) -> None:
    """SQLite stores NaN as NULL: a NaN sample (a power counter that read nothing) stopped the runner."""
    first, _ = _begin(store)
    store.add_telemetry(first, [("power_w", 1.0, math.nan), ("power_w", 2.0, 30.0), ("cpu", math.inf, 1.0)])
    assert store.telemetry(first) == {"power_w": [(2.0, 30.0)]}
