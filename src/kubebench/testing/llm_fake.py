"""An OpenAI-compatible server of known behaviour, for the load generator's tests and benchmarks:
the first token exactly ``ttft`` seconds after a request starts being served, then one token every
``tpot`` seconds (on an absolute schedule, so that jitter does not add up), with ``slots`` requests
served at once and the rest queued. Its capacity is therefore known: ``slots / (ttft + (n-1)·tpot)``
requests/s for ``n`` output tokens.

    python -m kubebench.testing.llm_fake --port 8000 --ttft 0.05 --tpot 0.01 --slots 8
    with FakeLLMServer(ttft=0.05, tpot=0.01) as server: server.url  # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time

from aiohttp import web

from ..workloads.openai_prompt import max_tokens_of, prompt_of, read_body

MODEL = "fake-llm"


class FakeLLM:
    """The server's behaviour and counters (shared with its /metrics)."""

    def __init__(self, ttft: float, tpot: float, slots: int, fail_every: int = 0, usage: bool = True) -> None:
        self.ttft, self.tpot, self.fail_every, self.usage = ttft, tpot, fail_every, usage
        self.slots = asyncio.Semaphore(slots) if slots > 0 else None
        self.requests = 0
        self.running = 0

    async def completions(self, request: web.Request) -> web.StreamResponse:
        """Stream ``max_tokens`` tokens as SSE chunks, then usage and ``[DONE]``."""
        self.requests += 1
        if self.fail_every and self.requests % self.fail_every == 0:
            return web.json_response({"error": {"message": "injected failure"}}, status=503)
        chat = request.path.endswith("/chat/completions")
        try:
            body = read_body(await request.read())
            n = max_tokens_of(body)
            prompt = prompt_of(body, chat)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            return web.json_response({"error": {"message": f"bad request: {e}"}}, status=400)
        prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        if self.slots is not None:
            await self.slots.acquire()
        try:
            return await self._stream(request, chat, n, prompt_tokens)
        finally:
            if self.slots is not None:
                self.slots.release()

    async def _stream(self, request: web.Request, chat: bool, n: int, prompt_tokens: int) -> web.StreamResponse:
        self.running += 1
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        start = time.perf_counter()
        try:
            for k in range(n):
                delay = start + self.ttft + k * self.tpot - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                await response.write(_event(_chunk(chat, f" t{k}")))
            if self.usage:  # a server that does not count (or ignores include_usage) sends none
                usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
                await response.write(_event({"id": "x", "object": "chunk", "choices": [], "usage": usage}))
            await response.write(b"data: [DONE]\n\n")
        finally:
            self.running -= 1
        return response

    async def models(self, request: web.Request) -> web.Response:
        """``/v1/models``."""
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def health(self, request: web.Request) -> web.Response:
        """``/health``."""
        return web.Response(text="ok")

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus text: requests served and running."""
        text = (f"# TYPE fake_requests_total counter\nfake_requests_total {self.requests}\n"
                f"# TYPE fake_requests_running gauge\nfake_requests_running {self.running}\n")
        return web.Response(text=text, content_type="text/plain")


def _chunk(chat: bool, text: str) -> dict:
    choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
    return {"id": "x", "object": "chunk", "choices": [choice]}


def _event(data: dict) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def make_app(llm: FakeLLM) -> web.Application:
    """The aiohttp application of ``llm``."""
    app = web.Application()
    app.router.add_post("/v1/completions", llm.completions)
    app.router.add_post("/v1/chat/completions", llm.completions)
    app.router.add_get("/v1/models", llm.models)
    app.router.add_get("/health", llm.health)
    app.router.add_get("/metrics", llm.metrics)
    return app


class AppThread:
    """An aiohttp application on a free loopback port, in a thread of this process (a context
    manager); ``make()`` builds the application inside the thread's event loop."""

    def __init__(self, make) -> None:
        self.make = make
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="llm-server")

    @property
    def url(self) -> str:
        """The base URL, ending in ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.make(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def __enter__(self):
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("the server did not start in 60 s")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)


class FakeLLMServer(AppThread):
    """The fake server on a free loopback port, in a thread of this process."""

    def __init__(self, ttft: float = 0.05, tpot: float = 0.01, slots: int = 0, fail_every: int = 0,
                 usage: bool = True) -> None:
        super().__init__(self._make)
        self.args = (ttft, tpot, slots, fail_every, usage)

    def _make(self) -> web.Application:
        self.llm = FakeLLM(*self.args)
        return make_app(self.llm)


def main(argv: list[str] | None = None) -> None:
    """Serve until killed (``--port`` defaults to ``$KUBEBENCH_SERVER_PORT`` or 8000)."""
    import os

    p = argparse.ArgumentParser(prog="python -m kubebench.testing.llm_fake")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("KUBEBENCH_SERVER_PORT", 8000)))
    p.add_argument("--ttft", type=float, default=0.05)
    p.add_argument("--tpot", type=float, default=0.01)
    p.add_argument("--slots", type=int, default=0, help="requests served at once (0: unlimited)")
    args = p.parse_args(argv)
    web.run_app(make_app(FakeLLM(args.ttft, args.tpot, args.slots)), host=args.host, port=args.port,
                access_log=None, print=None)


if __name__ == "__main__":
    main()
