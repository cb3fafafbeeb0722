"""Finding 12: statistics of huge finite values do not overflow (the median of [1.7e308] * 3 was
null, ``/api/compare`` answered 500 and ``kubebench compare`` printed a traceback)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings, strategies as st
from limits_support import dashboard, run_cli

from kubebench.analyse.compare import compare
from kubebench.numerics.stats import bootstrap_median_ratio, olympic_mean, summarize

MAX = sys.float_info.max
finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(finite, min_size=1, max_size=12))
def test_the_summary_of_finite_values_is_finite_where_the_true_value_is(values: list[float]) -> None:
    s = summarize(values)
    assert s.n == len(values) and s.failed == 0
    low, high = min(values), max(values)
    for name in ("mean", "median", "olympic_mean"):
        value = getattr(s, name)
        assert math.isfinite(value) and low <= value <= high, (name, value)
    assert (s.min, s.max) == (low, high)
    if len(values) >= 2:
        assert s.stdev >= 0 and not math.isnan(s.stdev)  # inf only when the true one is above MAX
        if max(abs(v) for v in values) < MAX / 4:
            assert math.isfinite(s.stdev)
    assert math.isfinite(olympic_mean(values))


def test_the_reviewed_values_summarize_exactly() -> None:
    s = summarize([1.7e308] * 3)
    assert (s.mean, s.median, s.olympic_mean, s.stdev, s.min, s.max) == (1.7e308, 1.7e308, 1.7e308, 0.0, 1.7e308,
                                                                          1.7e308)
    assert summarize([-1.7e308, 1.7e308]).mean == 0.0
    assert summarize([5e-324] * 2).median == 5e-324  # the tiniest values keep their precision too


@settings(max_examples=100, deadline=None)
@given(scale=st.floats(1e300, MAX), n=st.integers(2, 8), shift=st.floats(0.5, 1.0))
def test_a_comparison_of_huge_values_is_a_verdict_not_an_error(scale: float, n: int, shift: float) -> None:
    base = [scale * shift] * n
    candidate = [scale * shift * 0.999] * n
    result = compare(base, candidate, goal="maximize")
    assert result.verdict in ("regressed", "unchanged")
    assert math.isfinite(result.ratio) and 0.99 < result.ratio <= 1.0
    low, high = bootstrap_median_ratio(candidate, base)
    assert math.isfinite(low) and math.isfinite(high)
    json.dumps(result.to_dict(), allow_nan=False)


def test_compare_of_equal_huge_values_is_unchanged() -> None:
    result = compare([1.7e308] * 3, [1.7e308] * 3, goal="maximize")
    assert (result.ratio, result.verdict) == (1.0, "unchanged")
    assert result.base.median == 1.7e308


@pytest.mark.slow
def test_the_cli_and_the_api_compare_huge_values(tmp_path: Path) -> None:
    home = tmp_path / "home"
    job = ("import json, os; json.dump({'big': 1.7e308}, "
           "open(os.environ['KUBEBENCH_EXP_RESULT_PATH'] + '/result.json', 'w'))")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({
        "name": "nan", "repeats": 3, "telemetry": {"enabled": False}, "job": {"command": ["python", "-c", job]},
        "metrics": [{"name": "big", "primary": True}]}), encoding="utf-8")
    env = {"KUBEBENCH_HOME": str(home)}
    assert run_cli("run", "spec.yaml", "--id", "nan-1", cwd=tmp_path, env=env).returncode == 0
    done = run_cli("compare", "nan-1", "nan-1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "unchanged" in done.stdout and "Traceback" not in done.stderr
    with dashboard(home) as client:
        answer = client.get("/api/compare", params={"a": "nan-1", "b": "nan-1"})
    assert answer.status_code == 200, answer.text[:500]
    row = answer.json()["rows"][0]
    assert (row["ratio"], row["verdict"], row["a"]["median"]) == (1.0, "unchanged", 1.7e308)


def test_numpy_agrees_on_ordinary_values() -> None:
    values = [3.0, 1.0, 2.0, 10.0]
    s = summarize(values)
    assert s.mean == pytest.approx(np.mean(values)) and s.median == np.median(values)
    assert s.stdev == pytest.approx(np.std(values, ddof=1))
