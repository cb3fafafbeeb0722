"""Tests of kubebench.analyse.checks: the message of an unknown metric (issue #20's surviving mutants)."""

from __future__ import annotations

import pytest

from kubebench.analyse.checks import check_metric
from kubebench.errors import SpecError


def test_an_unknown_metric_is_named_with_the_metrics_there_are_comma_separated() -> None:
    with pytest.raises(SpecError) as raised:
        check_metric("images_per_sec", ["latency_ms", "tokens_per_sec"], declared=["accuracy", "latency_ms"])
    # declared first, then found, each once, in order
    assert str(raised.value) == "no run has a metric 'images_per_sec'; metrics: accuracy, latency_ms, tokens_per_sec"


def test_an_unknown_metric_when_there_are_none_says_none() -> None:
    with pytest.raises(SpecError) as raised:
        check_metric("images_per_sec", [])
    assert str(raised.value) == "no run has a metric 'images_per_sec'; metrics: none"


def test_a_found_or_declared_metric_passes() -> None:
    assert check_metric("a", ["a"]) is None
    assert check_metric("b", [], declared=["b"]) is None
