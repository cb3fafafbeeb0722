"""N15 (review of 2026-12-02): the reference server decoded abandoned requests to the end (64 of them,
about 10 KB sent, delayed a legitimate request from 0.01 s to 37.8 s, and its counters served them),
and ``max_tokens: Infinity`` or a deeply nested body was a 500. A request whose client leaves is now
cancelled in the engine, and a body that is not a JSON object of the right types is a 400."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("torch")

from kubebench.testing.llm_fake import AppThread  # noqa: E402
from kubebench.workloads import llm_server  # noqa: E402

MAX_TOKENS = 900


@pytest.fixture(scope="module")
def server():
    args = llm_server.parse_args(["--max-batch", "4", "--dim", "64", "--vocab", "512", "--max-seq", "1024"])
    engine = llm_server.build_engine(args)
    with AppThread(lambda: llm_server.make_app(engine)) as running:
        yield running
    engine.stop()


def _post(server: AppThread, data: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(server.url + "/completions", data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _counters(server: AppThread) -> dict[str, float]:
    text = urllib.request.urlopen(server.url.removesuffix("/v1") + "/metrics", timeout=30).read().decode()
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line and line[0] != "#"}


def _until(server: AppThread, done, seconds: float = 60.0) -> dict[str, float]:
    """The counters once ``done(counters)`` holds (polled: the engine works on its own thread)."""
    deadline = time.monotonic() + seconds
    while not done(counters := _counters(server)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return counters


@pytest.mark.parametrize("data, message", [
    (b'{"prompt": "a", "max_tokens": Infinity}', b"Infinity is not a JSON number"),
    (b'{"prompt": "a", "max_tokens": NaN}', b"NaN is not a JSON number"),
    (b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", b"nested too deep"),
    (b'{"prompt": "a", "max_tokens": 1.5}', b"max_tokens must be a whole number"),
    (b'{"prompt": "a", "max_tokens": "8"}', b"max_tokens must be a whole number"),
    (b'{"prompt": "a", "max_tokens": true}', b"max_tokens must be a whole number"),
    (b'{"prompt": "a", "stream": true, "stream_options": [1]}', b"stream_options must be an object"),
    (b'[{"prompt": "a"}]', b"must be a JSON object"),
    (b'{"prompt": "\xff"}', b"bad request"),
])
def test_a_body_the_server_cannot_serve_is_a_400(server: AppThread, data: bytes, message: bytes) -> None:
    status, answer = _post(server, data)
    assert status == 400 and message in answer


def test_a_body_past_its_bound_is_a_413(server: AppThread) -> None:
    status, _ = _post(server, json.dumps({"prompt": "a " * (1 << 20), "max_tokens": 4}).encode())
    assert status == 413


def _send(server: AppThread, stream: bool) -> socket.socket:
    body = json.dumps({"prompt": "x", "max_tokens": MAX_TOKENS, "stream": stream, "ignore_eos": True}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    return sock


@pytest.mark.parametrize("stream", [True, False])
def test_requests_whose_clients_left_are_not_decoded(server: AppThread, stream: bool) -> None:
    before = _counters(server)
    for _ in range(8):  # sent and abandoned at once, as in the review
        _send(server, stream).close()
    if stream:
        with _send(server, stream) as sock:  # abandoned once its answer has begun
            sock.recv(1)
    sent = 9 if stream else 8

    def delta(counters: dict[str, float], name: str) -> float:
        return counters[f"kubebench_llm_{name}"] - before[f"kubebench_llm_{name}"]

    after = _until(server, lambda c: delta(c, "requests_total") == sent and delta(c, "requests_cancelled_total") == sent)
    assert delta(after, "requests_total") == sent and delta(after, "requests_cancelled_total") == sent
    # decoding them to the end takes minutes here; cancelled, each stops within a few decode steps
    assert delta(after, "generated_tokens_total") < sent * 60
    started = time.perf_counter()
    status, answer = _post(server, b'{"prompt": "hello", "max_tokens": 4}')
    assert status == 200 and json.loads(answer)["usage"]["completion_tokens"] == 4
    assert time.perf_counter() - started < 10
