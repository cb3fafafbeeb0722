"""The runs table's filter language."""

from __future__ import annotations

import pytest

from kubebench.analyse.query import parse
from kubebench.errors import SpecError

ROWS = [
    {"params": {"batch_size": 32, "opt": "adam"}, "metrics": {"images_per_sec": 1200.0}, "labels": {"version": "1.4.2"},
     "tags": ["nightly"], "env": {"gpu.name": "H100"}, "experiment": {"id": "a1", "name": "resnet"}},
    {"params": {"batch_size": 16, "opt": "sgd"}, "metrics": {"images_per_sec": 900.0}, "labels": {"version": "1.4.1"},
     "tags": [], "env": {}, "experiment": {"id": "b2", "name": "resnet"}},
    {"params": {"batch_size": 64}, "metrics": {}, "labels": {}, "tags": ["gpu", "Nightly-2"], "env": {},
     "experiment": {"id": "c3", "name": "bert"}},
]


def ids(query: str) -> list[str]:
    keep = parse(query)
    return [r["experiment"]["id"] for r in ROWS if keep(r)]


@pytest.mark.parametrize("query, expected", [
    ('params.batch_size >= 32 and metrics.images_per_sec > 1000 and labels.version = "1.4.2"', ["a1"]),
    ("params.batch_size >= 32", ["a1", "c3"]),
    ("params.batch_size < 32 or labels.version == '1.4.2'", ["a1", "b2"]),
    ("not (params.opt = adam)", ["b2", "c3"]),  # a missing field is false, so its negation is true
    ("metrics.images_per_sec != 900", ["a1"]),
    ("tags.any ~ nightly", ["a1", "c3"]),
    ("experiment.name = resnet AND env.gpu.name ~ h100", ["a1"]),
    ("labels.version > 1.4.1", ["a1"]),  # not numbers: compared as text
    ("", ["a1", "b2", "c3"]),
])
def test_queries_select_the_rows(query: str, expected: list[str]) -> None:
    assert ids(query) == expected


@pytest.mark.parametrize("query, message", [
    ("params.batch_size >=", "at the end: expected a value after '>='"),
    ("batch_size > 3", "column 1, at 'batch_size': expected a field"),
    ("params.x > 3 metrics.y < 2", "column 14, at 'metrics.y': expected 'and', 'or'"),
    ("(params.x > 3", "expected ')'"),
    ("params.x ! 3", "invalid query at column 10"),
])
def test_a_bad_query_says_where(query: str, message: str) -> None:
    with pytest.raises(SpecError, match=None) as error:
        parse(query)
    assert message in str(error.value)
