"""N11 (review of 2026-12-02): the runs table's query nests ``(`` and ``not`` at most 32 levels deep.
Deeper is a located 422, never a 500 with a RecursionError's traceback in the server's log (about
120 KB per unauthenticated request); as deep as the limit still works."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kubebench.analyse.query import parse
from kubebench.errors import SpecError

MAX_DEPTH = 32  # kubebench.analyse.query.MAX_DEPTH, as docs/security.md states it


def nested(levels: int, kind: str) -> str:
    inner = "params.n = 1"
    if kind == "parens":
        return "(" * levels + inner + ")" * levels
    if kind == "not":
        return "not " * levels + inner
    return "(not " * (levels // 2) + inner + ")" * (levels // 2)


@pytest.mark.parametrize("kind", ["parens", "not", "mixed"])
def test_as_deep_as_the_limit_parses_deeper_is_a_located_error(kind: str) -> None:
    keep = parse(nested(MAX_DEPTH, kind))
    assert keep({"params": {"n": 1}}) is True  # an even number of nots
    with pytest.raises(SpecError, match=r"invalid query at column \d+: '\(' and 'not' nest more than 32 levels deep"):
        parse(nested(MAX_DEPTH + 2, kind))


@pytest.mark.parametrize("levels", [33, 330, 990])
def test_the_runs_table_answers_422_and_logs_no_traceback(tmp_path: Path, caplog, levels: int) -> None:
    from fastapi.testclient import TestClient

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = make_settings(home=tmp_path, store=f"sqlite:///{tmp_path / 'kubebench.db'}")
    app = make_app(open_store(config.store_url), config, token="n11-token")
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client, \
            caplog.at_level(logging.DEBUG):
        answer = client.get("/api/table", params={"q": nested(levels, "parens")[:2000]})
    assert answer.status_code == 422, answer.text[:300]
    assert answer.json()["detail"].endswith("'(' and 'not' nest more than 32 levels deep")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
