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


EDGES = [
    {"experiment": {"id": "a"}, "params": {"bs": 32, "amp": True, "model": "resnet50"},
     "labels": {"shards": "9", "version": "1.4.2", "note": 'say "hi"'}},
    {"experiment": {"id": "b"}, "params": {"bs": 16, "amp": False, "model": "bert"}, "labels": {"shards": "12", "version": "v2"}},
    {"experiment": {"id": "c"}, "params": {"bs": 64}, "labels": {}},
]


@pytest.mark.parametrize("query, expected", [
    ("params.bs < 32", ["b"]),  # the bounds: < leaves 32 out, <= keeps it
    ("params.bs <= 32", ["a", "b"]),
    ("params.amp = true", ["a"]),  # a boolean reads as true / false
    ("params.amp == false", ["b"]),
    ("labels.shards < 10", ["a"]),  # a label is text, but "9" is a number: 9 < 10 (as text, "9" > "10")
    ("labels.version > 1", ["a", "b"]),  # not numbers on one side: text ("1.4.2" > "1", "v2" > "1")
    (r'labels.note = "say \"hi\""', ["a"]),  # a quoted value's escapes are undone
    ("params.model ~ 50", ["a"]),  # ~ looks for the number as typed: "50" in "resnet50" (not "50.0")
    ("params.bs ~ 32", ["a"]),
    ("(params.bs >= 32) and params.model ~ resnet", ["a"]),  # what follows a ")" is read
    ("params.bs = 16 and not params.amp = true", ["b"]),  # a "not" after the first comparison
    ("params.bs > 1 ", ["a", "b", "c"]),  # blanks after the last value
    ("\tparams.bs > 1\n", ["a", "b", "c"]),
])
def test_the_edges_of_comparisons_and_of_the_grammar(query: str, expected: list[str]) -> None:
    keep = parse(query)
    assert [r["experiment"]["id"] for r in EDGES if keep(r)] == expected


FIELD = ("expected a field: params | metrics | labels | tags | env | experiment then '.' and a name "
         "(e.g. metrics.images_per_sec)")


@pytest.mark.parametrize("query, message", [
    ("params.x > 3 and", "invalid query at the end: expected a comparison such as params.batch_size >= 32"),
    ("not", "invalid query at the end: expected a comparison such as params.batch_size >= 32"),
    ("params.x = 1 and )", f"invalid query at column 18, at ')': {FIELD}"),
    ("params > 3", f"invalid query at column 1, at 'params': {FIELD}"),  # a section without a name
    ("foo.bar > 3", f"invalid query at column 1, at 'foo.bar': {FIELD}"),  # a name in no section
    ("params.x", "invalid query at the end: expected an operator (= != < <= > >= ~)"),
    ("params.x 3", "invalid query at column 10, at '3': expected an operator (= != < <= > >= ~)"),
    ("params.x ! 3 and params.y", "invalid query at column 10: unexpected '! 3 and pa'"),  # 10 characters shown
])
def test_a_bad_query_s_whole_message(query: str, message: str) -> None:
    with pytest.raises(SpecError) as error:
        parse(query)
    assert str(error.value) == message
