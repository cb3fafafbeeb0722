"""Scrapes of the server's own Prometheus ``/metrics`` during a load (vLLM's, SGLang's, TGI's …), kept
as samples for ``output/server-metrics.jsonl``.

The server under test is not trusted to be small: one scrape is read up to a bound (a larger one ends
scraping, with a note), and the samples kept are bounded in total by dropping every other one, so a
long run keeps its first and last samples and an even spread in between.
"""

from __future__ import annotations

import asyncio
import sys

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError

from .. import limits
from .client import Clock, read_bounded


class MetricsScraper:
    """Scrapes the server's ``/metrics`` during the run (when it has one) into samples."""

    def __init__(self, session: aiohttp.ClientSession, url: str, clock: Clock, interval: float) -> None:
        self.session, self.url, self.clock, self.interval = session, url, clock, interval
        self.samples: list[dict] = []
        self._kept = 0  # characters of the samples' text
        self._task: asyncio.Task | None = None
        self._stopped = False

    def start(self) -> None:
        """Begin scraping in the running loop."""
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while await self._scrape():
            await asyncio.sleep(self.interval)

    async def _scrape(self) -> bool:
        """One sample; False when scraping ends (the server has no ``/metrics``, or too large a one)."""
        if self._stopped:
            return False
        limit = limits.SCRAPE_BYTES.value()
        try:
            async with self.session.get(self.url, timeout=aiohttp.ClientTimeout(total=5)) as response:
                if response.status == 404:
                    self._stopped = True  # the server has no /metrics: nothing to scrape
                    return False
                body = await read_bounded(response, limit)
        except (aiohttp.ClientError, HttpProcessingError, asyncio.TimeoutError):
            return True
        if body is None:
            self._stopped = True
            print(f"{self.url} is larger than {limit:,} bytes ({limits.SCRAPE_BYTES.env}): scraping stopped",
                  file=sys.stderr, flush=True)
            return False
        self._keep({"time": self.clock.now(), "text": _samples_only(body.decode("utf-8", "replace"))})
        return True

    def _keep(self, sample: dict) -> None:
        self.samples.append(sample)
        self._kept += len(sample["text"])
        while self._kept > limits.SCRAPES_BYTES.value() and len(self.samples) > 2:
            # thin out: keep the first sample and every other one after it, and scrape half as often
            kept = self.samples[::2] if len(self.samples) % 2 else [*self.samples[:-1:2], self.samples[-1]]
            self.samples = kept
            self._kept = sum(len(s["text"]) for s in kept)
            self.interval *= 2

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
