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


def _read_chunk(data: bytes) -> tuple[str, dict, bool]:
    """(text, usage, finished) of one streamed chunk; ValueError when it is not the OpenAI shape."""
    chunk = json.loads(data)
    choices = chunk.get("choices") or [] if isinstance(chunk, dict) else None
    usage = chunk.get("usage") or {} if isinstance(chunk, dict) else None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices) \
            or not isinstance(usage, dict) \
            or not all(isinstance(usage.get(k) or 0, int) for k in ("prompt_tokens", "completion_tokens")):
        raise ValueError("a stream chunk is not an OpenAI completion chunk")
    first = choices[0] if choices else {}
    delta = first.get("delta") or {}
    text = delta.get("content") if "delta" in first and isinstance(delta, dict) else first.get("text")
    if not isinstance(text or "", str) or not isinstance(delta, dict):
        raise ValueError("a stream chunk's text is not a string")
    return text or "", usage, any(c.get("finish_reason") for c in choices)


async def send(session: aiohttp.ClientSession, target: Target, prompt: Prompt, clock: Clock, *, replica: int,
               index: int, scheduled: float, measured: bool) -> RequestRecord:
    """Send one request and stream its answer; any failure is a record with its kind, never an exception."""
    base = target.endpoints[index % len(target.endpoints)]
    path = "/chat/completions" if target.api == "chat" else "/completions"
    times: list[float] = []
    usage: dict = {}
    status, done = "ok", False
    sent = clock.now()
    try:
        async with session.post(base + path, json=request_body(target, prompt),
                                timeout=aiohttp.ClientTimeout(total=target.timeout)) as response:
            if response.status != 200:
                await response.read()
                status = f"http_{response.status}"
            else:
                async for line in response.content:
                    now = clock.now()
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        done = True
                        break
                    text, chunk_usage, finished = _read_chunk(data)
                    usage = chunk_usage or usage
                    if text:
                        times.append(now)
                    # a finish_reason ends the answer too: some servers (transformers serve) send no [DONE]
                    done = done or finished
    except asyncio.TimeoutError:
        status = "timeout"
    except aiohttp.ClientConnectionError:
        status = "connection"
    except (aiohttp.ClientError, ValueError):
        status = "protocol"
    end = clock.now()
    if status == "ok" and (not done or not times):
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


class MetricsScraper:
    """Scrapes the server's own Prometheus ``/metrics`` during the run (when it has one) into samples."""

    def __init__(self, session: aiohttp.ClientSession, url: str, clock: Clock, interval: float) -> None:
        self.session, self.url, self.clock, self.interval = session, url, clock, interval
        self.samples: list[dict] = []
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        """Begin scraping in the running loop."""
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while await self._scrape():
            await asyncio.sleep(self.interval)

    async def _scrape(self) -> bool:
        """One sample; False when the server has no ``/metrics``."""
        try:
            async with self.session.get(self.url, timeout=aiohttp.ClientTimeout(total=5)) as response:
                if response.status == 404:
                    return False  # the server has no /metrics: nothing to scrape
                text = await response.text()
                self.samples.append({"time": self.clock.now(), "text": _samples_only(text)})
        except (aiohttp.ClientError, asyncio.TimeoutError):
            pass
        return True

    async def stop(self) -> None:
        """Stop scraping, with a last sample: the server's counters at the end of the load (the
        periodic one may be up to an interval older, or cut short)."""
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
            await self._scrape()


def _samples_only(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line and not line.startswith("#"))


async def first_model(session: aiohttp.ClientSession, endpoint: str) -> str:
    """The id of the first model the server lists on ``/v1/models``."""
    async with session.get(endpoint + "/models", timeout=aiohttp.ClientTimeout(total=30)) as response:
        response.raise_for_status()
        data = await response.json()
    models = data.get("data") or []
    if not models:
        raise ValueError(f"{endpoint}/models lists no model; give --model")
    return str(models[0]["id"])
