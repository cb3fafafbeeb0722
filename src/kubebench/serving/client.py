"""The load generator's engine: an aiohttp client that streams completions from an OpenAI-compatible
server (``/v1/completions`` or ``/v1/chat/completions``, Server-Sent Events) and times every token,
in an open loop (a schedule of send times) or a closed loop (``concurrency`` users back to back).

aiohttp rather than httpx: one core drives several times more streaming requests per second with it,
and the client's own cost is what limits a load generator's accuracy (see bench/llm_client_cost.py).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

from .. import limits
from .prompts import Prompt
from .records import RequestRecord


@dataclass(frozen=True)
class Target:
    """Where to send: base URLs (``http://host:port/v1``, several are used in turn), model, API."""

    endpoints: tuple[str, ...]
    model: str
    api: str = "completions"  # or "chat"
    timeout: float = 600.0
    ignore_eos: bool = True
    #: Why answers were given up as ``protocol`` errors, with their counts (the records keep the kind).
    protocol_errors: dict[str, int] = field(default_factory=dict, compare=False)


@dataclass
class Clock:
    """Wall-clock seconds from a monotonic clock anchored once, so that gaps are exact and replicas
    on one machine share a time axis."""

    wall0: float = field(default_factory=time.time)
    mono0: float = field(default_factory=time.perf_counter)

    def now(self) -> float:
        """Seconds since the epoch."""
        return self.wall0 + (time.perf_counter() - self.mono0)


def request_body(target: Target, prompt: Prompt) -> dict:
    """The JSON body: stream, exactly ``output_tokens`` tokens (``ignore_eos``), usage in the stream."""
    body: dict = {"model": target.model, "stream": True, "max_tokens": prompt.output_tokens,
                  "stream_options": {"include_usage": True}, "temperature": 0.0}
    if target.ignore_eos:
        body["ignore_eos"] = True
    if target.api == "chat":
        text = prompt.text if isinstance(prompt.text, str) else " ".join(map(str, prompt.text))
        body["messages"] = [{"role": "user", "content": text}]
    else:
        body["prompt"] = prompt.text
    return body


#: Token counts a server may report in ``usage`` (what a Parquet int64 column and any real model hold).
MAX_TOKENS_COUNT = 2**31
#: Streamed events one answer may carry per token asked for (plus a few for role, usage and finish
#: events): past it, the server streams more than it was asked for and the request is given up.
EVENTS_PER_TOKEN, EXTRA_EVENTS = 4, 64


class ProtocolError(ValueError):
    """The server's answer is not what the OpenAI API streams (the request's status is ``protocol``)."""


def _count(usage: dict, key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_TOKENS_COUNT:
        raise ProtocolError(f"usage.{key} is not a token count from 0 to 2**31 - 1")
    return value


def _read_chunk(data: bytes) -> tuple[str, dict, bool]:
    """(text, usage, finished) of one streamed chunk; ProtocolError when it is not the OpenAI shape."""
    try:
        chunk = json.loads(data)
    except RecursionError as e:  # json's decoder recurses once per level: a deep document ends here
        raise ProtocolError("a stream chunk is nested too deep") from e
    except ValueError as e:  # not JSON, or not UTF-8
        raise ProtocolError(f"a stream chunk is not JSON: {type(e).__name__}") from e
    choices = chunk.get("choices") or [] if isinstance(chunk, dict) else None
    usage = chunk.get("usage") or {} if isinstance(chunk, dict) else None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices) \
            or not isinstance(usage, dict):
        raise ProtocolError("a stream chunk is not an OpenAI completion chunk")
    counts = {k: n for k in ("prompt_tokens", "completion_tokens") if (n := _count(usage, k)) is not None}
    first = choices[0] if choices else {}
    delta = first.get("delta") or {}
    text = delta.get("content") if "delta" in first and isinstance(delta, dict) else first.get("text")
    if not isinstance(text or "", str) or not isinstance(delta, dict):
        raise ProtocolError("a stream chunk's text is not a string")
    return text or "", counts, any(c.get("finish_reason") for c in choices)


@dataclass
class _Answer:
    """What one streamed answer brought so far: token times, the last usage, whether it finished."""

    times: list[float] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    done: bool = False


async def _stream(response: aiohttp.ClientResponse, answer: _Answer, clock: Clock, max_tokens: int) -> None:
    """Read the Server-Sent Events of one answer into ``answer``, within bounds on a line, on the whole
    answer's bytes and on its events (a server that never stops is given up, not read for ever)."""
    line_limit, byte_limit = limits.ANSWER_LINE_BYTES.value(), limits.ANSWER_BYTES.value()
    event_limit = EVENTS_PER_TOKEN * max(1, max_tokens) + EXTRA_EVENTS
    read = events = 0
    while line := await response.content.readline(max_line_length=line_limit):
        now = clock.now()
        read += len(line)
        if read > byte_limit:
            raise ProtocolError(f"the answer is longer than {byte_limit:,} bytes")
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            answer.done = True
            return
        events += 1
        if events > event_limit:
            raise ProtocolError(f"the answer streams more than {event_limit:,} events for {max_tokens} tokens")
        text, usage, finished = _read_chunk(data)
        answer.usage = usage or answer.usage
        if text:
            answer.times.append(now)
        # a finish_reason ends the answer too: some servers (transformers serve) send no [DONE]
        answer.done = answer.done or finished


async def read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The whole body, or None once it is longer than ``limit`` bytes (what came is dropped)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


async def _discard(response: aiohttp.ClientResponse) -> None:
    """Read an error's body, so that the connection can serve the next request, within a bound."""
    await read_bounded(response, limits.ANSWER_LINE_BYTES.value())


def _reason(error: Exception) -> str:
    """Why an answer was given up, without the server's bytes (which could hold terminal escapes)."""
    if isinstance(error, ProtocolError):
        return str(error)
    if isinstance(error, LineTooLong):
        return f"a line of the answer is longer than {limits.ANSWER_LINE_BYTES.value():,} bytes"
    return f"{type(error).__name__}: {ascii(str(error)[:200])}"


async def send(session: aiohttp.ClientSession, target: Target, prompt: Prompt, clock: Clock, *, replica: int,
               index: int, scheduled: float, measured: bool) -> RequestRecord:
    """Send one request and stream its answer; any failure is a record with its kind, never an exception.

    What the server sends is bounded (a line, the answer, its events: :func:`_stream`), so a server that
    answers too much, too deep or for ever costs this request, not the records of the others."""
    base = target.endpoints[index % len(target.endpoints)]
    path = "/chat/completions" if target.api == "chat" else "/completions"
    answer = _Answer()
    status = "ok"
    sent = clock.now()
    try:
        async with session.post(base + path, json=request_body(target, prompt),
                                timeout=aiohttp.ClientTimeout(total=target.timeout)) as response:
            if response.status != 200:
                status = f"http_{response.status}"
                await _discard(response)
            else:
                await _stream(response, answer, clock, prompt.output_tokens)
    except asyncio.TimeoutError:
        status = "timeout"
    except aiohttp.ClientConnectionError:
        status = "connection"
    except (aiohttp.ClientError, HttpProcessingError, ValueError) as e:  # ProtocolError, LineTooLong, …
        status = "protocol"
        reason = _reason(e)
        if reason in target.protocol_errors or len(target.protocol_errors) < 20:
            target.protocol_errors[reason] = target.protocol_errors.get(reason, 0) + 1
    end = clock.now()
    times, usage = answer.times, answer.usage
    if status == "ok" and (not answer.done or not times):
        status = "incomplete"
    from_usage = bool(usage.get("completion_tokens"))
    return RequestRecord(
        replica=replica, index=index, scheduled=scheduled, sent=sent, token_times=tuple(times), end=end,
        input_tokens=int(usage.get("prompt_tokens") or prompt.input_tokens),
        output_tokens=int(usage["completion_tokens"]) if from_usage else len(times),
        tokens_from="usage" if from_usage else "chunks", status=status, measured=measured,
    )


async def open_loop(session: aiohttp.ClientSession, target: Target, prompts: Sequence[Prompt],
                    offsets: Iterable[float], clock: Clock, replica: int) -> list[RequestRecord]:
    """Send request ``i`` at ``start + offsets[i]`` whatever the server does (an open loop)."""
    start = clock.now()
    tasks = []
    for i, (prompt, offset) in enumerate(zip(prompts, offsets)):
        due = start + float(offset)
        delay = due - clock.now()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send(session, target, prompt, clock, replica=replica, index=i,
                                              scheduled=due, measured=True)))
    return list(await asyncio.gather(*tasks))


async def closed_loop(session: aiohttp.ClientSession, target: Target, prompts: Sequence[Prompt],
                      concurrency: int, clock: Clock, replica: int, count: int | None,
                      duration: float | None) -> list[RequestRecord]:
    """``concurrency`` users, each sending its next request as soon as its last one ended, until
    ``count`` requests are sent or ``duration`` seconds have passed (prompts are used in turn)."""
    start = clock.now()
    next_index = iter(range(count)) if count is not None else itertools.count()
    records: list[RequestRecord] = []

    async def user() -> None:
        ready = clock.now()
        for i in next_index:
            offset = ready - start
            if duration is not None and offset >= duration:
                return
            record = await send(session, target, prompts[i % len(prompts)], clock, replica=replica, index=i, scheduled=ready,
                                measured=True)
            records.append(record)
            ready = clock.now()

    await asyncio.gather(*(user() for _ in range(concurrency)))
    return records


class LoopMonitor:
    """How late the event loop wakes from short sleeps: the client's own delay, which token times
    would count as the server's."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.delays: list[float] = []
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        """Begin sampling in the running loop."""
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.delays.append(max(0.0, time.perf_counter() - before - self.interval))

    async def stop(self) -> None:
        """Stop sampling."""
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class ServerError(Exception):
    """The server cannot be benchmarked as asked (no usable model list): the load generator exits 2."""


async def first_model(session: aiohttp.ClientSession, endpoint: str) -> str:
    """The id of the first model the server lists on ``/v1/models``; ServerError naming what is wrong."""
    url = endpoint + "/models"
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=30)) as response:
            response.raise_for_status()
            body = await read_bounded(response, limits.ANSWER_LINE_BYTES.value())
        if body is None:
            raise ServerError(f"{url} answers more than {limits.ANSWER_LINE_BYTES.value():,} bytes; give --model")
        data = json.loads(body)
    except (aiohttp.ClientError, HttpProcessingError, asyncio.TimeoutError) as e:
        raise ServerError(f"cannot list the models at {url} ({type(e).__name__}: {str(e)[:200]}); "
                          "give --model, or check --endpoint") from e
    except (ValueError, RecursionError) as e:
        raise ServerError(f"{url} does not answer JSON; give --model") from e
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list) or not models:
        raise ServerError(f"{url} lists no model (no \"data\" list); give --model")
    model = models[0].get("id") if isinstance(models[0], dict) else None
    if not isinstance(model, str) or not model or len(model) > 1024:
        raise ServerError(f"{url}: its first model has no \"id\" string; give --model")
    return model
