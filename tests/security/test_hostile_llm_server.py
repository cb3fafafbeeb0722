"""N6 (review of 2026-12-02): one malformed or endless answer of the server under test crashed the load
generator and lost every record (deep JSON, an 8 MiB line, usage of 10^400 tokens, a model without an
id), or grew its memory without bound (an endless stream, a 400 MB ``/metrics``); negative usage gave
negative throughputs. Each is now a ``protocol`` record of that request, and what one answer or one
scrape may cost is bounded (``limits.ANSWER_LINE_BYTES``, ``ANSWER_BYTES``, ``SCRAPE_BYTES``,
``SCRAPES_BYTES``, and events per token asked for)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web
from hypothesis import given, settings, strategies as st

from kubebench.serving import client
from kubebench.serving.records import read_records
from kubebench.serving.scrape import MetricsScraper
from kubebench.testing.llm_fake import AppThread
from kubebench.workloads import llm_load

TOKEN = b'data: {"choices": [{"index": 0, "text": "a"}]}\n\n'


def _hostile(answer: bytes | None = None, *, endless: bytes = b"", models: bytes = b'{"data": [{"id": "m"}]}',
             metrics: bytes = b"") -> web.Application:
    """A server answering every completion with ``answer``, then ``endless`` for as long as the client
    reads; ``/v1/models`` and ``/metrics`` as given."""
    async def complete(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if answer:
            await response.write(answer)
        for _ in range(200_000 if endless else 0):  # the client leaves long before
            await response.write(endless * 64)
        return response

    async def listing(request: web.Request) -> web.Response:
        return web.Response(body=models, content_type="application/json")

    async def scrape(request: web.Request) -> web.Response:
        return web.Response(body=metrics) if metrics else web.Response(status=404)

    app = web.Application()
    app.router.add_post("/v1/completions", complete)
    app.router.add_get("/v1/models", listing)
    app.router.add_get("/metrics", scrape)
    return app


def _records(server: AppThread, *extra: str) -> list:
    args = llm_load.parse_args(["--endpoint", server.url, "--model", "m", "--concurrency", "1", "--requests", "2",
                                "--output-tokens", "2", "--scrape-interval", "0", *extra])
    return list(asyncio.run(llm_load.run(args, 0))[0].records)


def _usage(value: bytes) -> bytes:
    return TOKEN + b'data: {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": %s}}\n\n' % value + \
        b"data: [DONE]\n\n"


@pytest.mark.parametrize("answer, endless", [
    (b"data: " + b"[" * 30_000 + b"]" * 30_000 + b"\n\n", b""),  # RecursionError in json
    (_usage(b"1" + b"0" * 400), b""),  # OverflowError when the records were written
    (_usage(b"-1000"), b""),  # negative throughputs
    (_usage(b"true"), b""),  # a bool is an int to Python
    (_usage(b"1e400"), b""),  # a float (inf)
    (b"data: " + json.dumps({"choices": [{"text": "A" * 300_000}]}).encode() + b"\n\n", b""),  # LineTooLong
    (b"", TOKEN),  # tokens for ever: more events than asked for
    (b"", b": keep-alive comment\n"),  # bytes for ever, no event at all
], ids=["deep", "bigint", "negative", "bool", "float", "giant-line", "endless-tokens", "endless-comments"])
def test_a_hostile_answer_is_a_protocol_record_of_that_request(answer: bytes, endless: bytes, monkeypatch) -> None:
    monkeypatch.setenv("KUBEBENCH_MAX_ANSWER_LINE_BYTES", "100000")
    monkeypatch.setenv("KUBEBENCH_MAX_ANSWER_BYTES", "200000")
    with AppThread(lambda: _hostile(answer, endless=endless)) as server:
        records = _records(server)
    assert [r.status for r in records] == ["protocol", "protocol"]
    assert all(0 <= r.output_tokens < 2**31 and 0 <= r.input_tokens < 2**31 for r in records)
    assert all(len(r.token_times) <= client.EVENTS_PER_TOKEN * 2 + client.EXTRA_EVENTS for r in records)


def test_the_records_of_a_hostile_run_are_written_and_the_run_goes_on(tmp_path: Path, capsys) -> None:
    with AppThread(lambda: _hostile(_usage(b"1" + b"0" * 400))) as server:
        code = llm_load.main(["--endpoint", server.url, "--concurrency", "1", "--requests", "3", "--output-tokens",
                              "2", "--scrape-interval", "0", "--allow-invalid", "--records", str(tmp_path / "r.jsonl")])
    out, err = capsys.readouterr()
    assert code == 0 and "error_rate_protocol=1.0" in out
    data = read_records(tmp_path / "r.jsonl")
    assert [r.status for r in data.records] == ["protocol"] * 3
    reason = "usage.completion_tokens is not a token count from 0 to 2**31 - 1"
    assert data.meta["protocol_errors"] == {reason: 3}
    assert f"3 answer(s) given up as protocol errors: {reason}" in err


@pytest.mark.parametrize("models, message", [
    (b'{"data": [{"name": "x"}]}', 'no "id" string'),
    (b'{"data": []}', "lists no model"),
    (b'{"data": {"id": "m"}}', "lists no model"),
    (b'[{"id": "m"}]', "lists no model"),
    (b"[" * 30_000, "does not answer JSON"),
    (b"\xff\xfe", "does not answer JSON"),
])
def test_a_bad_model_list_exits_2_naming_it(models: bytes, message: str, capsys) -> None:
    with AppThread(lambda: _hostile(TOKEN, models=models)) as server:
        code = llm_load.main(["--endpoint", server.url, "--rate", "1", "--requests", "1"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "/v1/models" in err and "Traceback" not in err


def test_a_metrics_page_past_its_bound_ends_scraping(monkeypatch, capsys) -> None:
    monkeypatch.setenv("KUBEBENCH_MAX_SCRAPE_BYTES", "10000")
    with AppThread(lambda: _hostile(TOKEN + b"data: [DONE]\n\n", metrics=b"x 1\n" * 5000)) as server:
        args = llm_load.parse_args(["--endpoint", server.url, "--model", "m", "--rate", "50", "--requests", "3",
                                    "--output-tokens", "1", "--scrape-interval", "0.01"])
        data, _, samples = asyncio.run(llm_load.run(args, 0))
    assert samples == [] and [r.status for r in data.records] == ["ok"] * 3
    assert "scraping stopped" in capsys.readouterr().err


def test_the_samples_kept_are_bounded_and_keep_the_first_and_last(monkeypatch) -> None:
    monkeypatch.setenv("KUBEBENCH_MAX_SCRAPES_BYTES", "1000")
    scraper = MetricsScraper(None, "http://unused/metrics", client.Clock(), 1.0)  # type: ignore[arg-type]
    for i in range(1000):
        scraper._keep({"time": float(i), "text": "x" * 100})
    times = [s["time"] for s in scraper.samples]
    assert sum(len(s["text"]) for s in scraper.samples) <= 1000 and len(times) >= 5
    assert times[0] == 0.0 and times[-1] == 999.0 and times == sorted(times)
    assert scraper.interval > 1.0  # scraping slows down as it thins out


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=10)
CHOICE = st.fixed_dictionaries({}, optional={
    "text": JSON, "delta": JSON | st.fixed_dictionaries({}, optional={"content": JSON}), "finish_reason": JSON})
CHUNK = st.fixed_dictionaries({}, optional={
    "choices": JSON | st.lists(CHOICE | JSON, max_size=2),
    "usage": JSON | st.fixed_dictionaries({}, optional={"prompt_tokens": JSON, "completion_tokens": JSON})})


@settings(max_examples=300, deadline=None)
@given(st.one_of(CHUNK.map(lambda v: json.dumps(v).encode()), JSON.map(lambda v: json.dumps(v).encode()),
                 st.binary(max_size=50)))
def test_a_chunk_is_read_or_refused_as_protocol_never_anything_else(data: bytes) -> None:
    try:
        text, usage, finished = client._read_chunk(data)
    except client.ProtocolError:
        return
    assert isinstance(text, str) and isinstance(finished, bool)
    assert all(type(n) is int and 0 <= n < 2**31 for n in usage.values())
