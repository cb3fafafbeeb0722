"""The load generator against a server of known behaviour (kubebench.testing.llm_fake) on loopback.

Timing here is loose on purpose (the machine is shared): bounds that no client can beat (a token
cannot come before the server sends it) and counts. Accuracy figures are in bench/llm_accuracy.py.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from aiohttp import web

from kubebench.serving.metrics import percentile
from kubebench.serving.records import find_records, read_records
from kubebench.testing.llm_fake import AppThread, FakeLLMServer
from kubebench.workloads import llm_load


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer(ttft=0.05, tpot=0.01) as fake:
        yield fake


def run(argv: list[str]):
    args = llm_load.parse_args(argv)
    return asyncio.run(llm_load.run(args, 0))


def test_open_loop_times_every_token_of_every_request(server: FakeLLMServer) -> None:
    data, delays, scrapes = run(["--endpoint", server.url, "--rate", "20", "--requests", "30", "--output-tokens", "8",
                                 "--input-tokens", "16", "--scrape-interval", "0.1"])
    records = data.records
    assert len(records) == 30 and all(r.ok for r in records), [r.status for r in records]
    assert all(r.output_tokens == 8 and len(r.token_times) == 8 and r.tokens_from == "usage" for r in records)
    assert all(r.input_tokens == 16 for r in records)
    assert min(r.ttft for r in records) >= 0.05  # no token before the server sends it
    assert min(r.e2e for r in records) >= 0.05 + 7 * 0.01
    assert 0.05 <= percentile([r.ttft for r in records], 50) < 0.5
    assert sorted(r.index for r in records) == list(range(30))
    assert all(r.measured for r in records) and data.window[0] <= min(r.sent for r in records)
    assert data.meta["model"] == "fake-llm" and delays
    assert scrapes and "fake_requests_total" in scrapes[0]["text"]


def test_chat_api_streams_deltas(server: FakeLLMServer) -> None:
    data, _, _ = run(["--endpoint", server.url, "--api", "chat", "--concurrency", "2", "--requests", "6",
                      "--output-tokens", "5"])
    assert len(data.records) == 6 and all(r.ok and r.output_tokens == 5 for r in data.records)


def _streaming(*events: bytes) -> web.Application:
    """A server answering every completion with these SSE bytes, then closing the stream."""
    async def answer(request: web.Request) -> web.StreamResponse:
        await request.json()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in events:
            await response.write(event)
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    return app


TOKEN = b'data: {"choices": [{"index": 0, "delta": {"content": " w1"}}]}\n\n'
LAST = b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "usage": {"completion_tokens": 2}}\n\n'


@pytest.mark.parametrize("events,status", [
    ((TOKEN, TOKEN, LAST, b"data: [DONE]\n\n"), "ok"),
    ((TOKEN, TOKEN, LAST), "ok"),  # no [DONE] after a finish_reason: transformers serve ends its streams so
    ((TOKEN, TOKEN), "incomplete"),  # cut short: neither a finish_reason nor [DONE]
])
def test_an_answer_is_complete_at_done_or_at_a_finish_reason(events: tuple[bytes, ...], status: str) -> None:
    with AppThread(lambda: _streaming(*events)) as server:
        data, _, _ = run(["--endpoint", server.url, "--model", "m", "--api", "chat", "--concurrency", "1",
                          "--requests", "2", "--output-tokens", "2", "--scrape-interval", "0"])
    assert [r.status for r in data.records] == [status, status]
    assert all(len(r.token_times) == 2 for r in data.records)


@pytest.mark.parametrize("chunk", [
    b"[1, 2]",  # not an object
    b'{"choices": [" w1"]}',  # choices that are not objects
    b'{"choices": {"delta": {"content": " w1"}}}',
    b'{"choices": [{"delta": " w1"}]}',
    b'{"choices": [{"delta": {"content": 7}}]}',  # text that is not text
    b'{"choices": [], "usage": [2]}',
    b'{"choices": [], "usage": {"completion_tokens": "two"}}',  # a count that is not one
])
def test_a_malformed_chunk_is_a_protocol_record_not_a_crash(chunk: bytes) -> None:
    with AppThread(lambda: _streaming(TOKEN, b"data: " + chunk + b"\n\n", LAST)) as server:
        data, _, _ = run(["--endpoint", server.url, "--model", "m", "--api", "chat", "--concurrency", "1",
                          "--requests", "2", "--output-tokens", "2", "--scrape-interval", "0"])
    assert [r.status for r in data.records] == ["protocol", "protocol"]


def test_closed_loop_keeps_its_users_busy_until_the_count(server: FakeLLMServer) -> None:
    data, _, _ = run(["--endpoint", server.url, "--concurrency", "3", "--requests", "12", "--output-tokens", "4"])
    records = sorted(data.records, key=lambda r: r.sent)
    assert len(records) == 12 and all(r.ok for r in records)
    in_flight = max(sum(1 for o in records if o.sent <= r.sent < o.end) for r in records)
    assert in_flight == 3


def test_server_errors_are_records_with_their_kind() -> None:
    with FakeLLMServer(ttft=0.01, tpot=0.001, fail_every=3) as failing:
        data, _, _ = run(["--endpoint", failing.url, "--model", "m", "--rate", "50", "--requests", "9",
                          "--output-tokens", "2"])
    assert sorted(r.status for r in data.records).count("http_503") == 3


def test_an_unreachable_server_is_a_connection_error_per_request() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data, _, _ = run(["--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m", "--rate", "100", "--requests", "3"])
    assert [r.status for r in data.records] == ["connection"] * 3


def test_main_writes_records_and_reports_metric_lines(server: FakeLLMServer, tmp_path: Path, monkeypatch,
                                                       capsys) -> None:
    monkeypatch.setenv("KUBEBENCH_EXP_OUTPUT_PATH", str(tmp_path))
    code = llm_load.main(["--endpoint", server.url, "--rate", "20", "--requests", "20", "--output-tokens", "6",
                          "--slo", "ttft=5s,tpot=1s", "--max-lag", "10", "--scrape-interval", "0.2"])
    out = capsys.readouterr().out
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("KUBEBENCH_METRIC"))
    for name in ("ttft_p50", "ttft_p90", "ttft_p99", "ttft_mean", "tpot_p99", "itl_p50", "e2e_p99",
                 "request_throughput", "output_tokens_per_s", "goodput", "error_rate", "client_valid=1.0"):
        assert name in line
    assert "tokens counted from: usage" in out
    (path,) = find_records(tmp_path)
    assert path.name == "requests-0.parquet" and len(read_records(path).records) == 20
    assert read_records(path).meta["valid"] is True
    assert (tmp_path / "server-metrics.jsonl").exists()


def test_a_client_that_cannot_keep_up_is_invalid_and_reports_no_latency(server: FakeLLMServer, tmp_path: Path,
                                                                         capsys) -> None:
    code = llm_load.main(["--endpoint", server.url, "--rate", "50", "--requests", "10", "--output-tokens", "2",
                          "--max-lag", "1e-9", "--records", str(tmp_path / "r.jsonl")])
    captured = capsys.readouterr()
    assert code == llm_load.INVALID_EXIT
    assert "INVALID run: the client could not keep up" in captured.err and "lag" in captured.err
    assert "client_valid=0.0" in captured.out and "ttft_p50" not in captured.out
    assert read_records(tmp_path / "r.jsonl").meta["invalid_reasons"]


@pytest.mark.parametrize("argv, message", [
    (["--rate", "1"], "exactly one of --requests"),
    (["--rate", "1", "--requests", "3", "--input-tokens", "9:2"], "LOW <= HIGH"),
    (["--rate", "1", "--requests", "3", "--slo", "ttft=soon"], "not a duration"),
    (["--rate", "-1", "--requests", "3"], "--rate must be positive"),
])
def test_bad_options_exit_2_naming_the_option(argv: list[str], message: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        llm_load.parse_args(["--endpoint", "http://x/v1", *argv])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_energy_per_token_from_the_gpu_counter_at_the_window_ends(server: FakeLLMServer, tmp_path: Path,
                                                                   monkeypatch, capsys) -> None:
    from kubebench.serving import energy

    readings = iter([1000.0, 1250.0])
    monkeypatch.setattr(energy, "total_energy_joules", lambda: next(readings))
    code = llm_load.main(["--endpoint", server.url, "--rate", "20", "--requests", "10", "--output-tokens", "5",
                          "--max-lag", "10", "--records", str(tmp_path / "r.jsonl")])
    out = capsys.readouterr().out
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("KUBEBENCH_METRIC"))
    assert "energy_joules=250.0" in line
    assert "energy_per_output_token_j=5.0" in line and "energy_per_request_j=25.0" in line


def test_without_gpus_no_energy_is_reported(server: FakeLLMServer, tmp_path: Path, capsys) -> None:
    code = llm_load.main(["--endpoint", server.url, "--rate", "20", "--requests", "4", "--output-tokens", "2",
                          "--max-lag", "10", "--records", str(tmp_path / "r.jsonl")])
    assert code == 0 and "energy_joules" not in capsys.readouterr().out


def test_without_usage_tokens_are_counted_from_the_chunks() -> None:
    with FakeLLMServer(ttft=0.01, tpot=0.001, usage=False) as quiet:
        data, _, _ = run(["--endpoint", quiet.url, "--model", "m", "--concurrency", "2", "--requests", "4",
                          "--output-tokens", "6", "--input-tokens", "3"])
    assert all(r.ok and r.tokens_from == "chunks" and r.output_tokens == 6 and r.input_tokens == 3
               for r in data.records)


def test_prompts_from_a_sharegpt_file(server: FakeLLMServer, tmp_path: Path) -> None:
    import json

    rows = [{"conversations": [{"from": "human", "value": "how are you today"}, {"from": "gpt", "value": "fine thanks"}]},
            {"conversations": [{"from": "human", "value": "   "}, {"from": "gpt", "value": "skipped: empty prompt"}]},
            {"prompt": "one two three four five", "output_tokens": 3}]
    dataset = tmp_path / "sharegpt.jsonl"
    dataset.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    data, _, _ = run(["--endpoint", server.url, "--rate", "50", "--requests", "6", "--dataset", str(dataset)])
    pairs = sorted({(r.input_tokens, r.output_tokens) for r in data.records})
    assert pairs == [(4, 2), (5, 3)] and len(data.records) == 6
