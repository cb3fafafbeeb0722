"""kubebench's reference LLM server: an OpenAI-compatible HTTP server (streaming SSE) in front of
kubebench's transformer (``llm_model``, random seeded weights) with a KV cache and continuous batching
(``llm_engine``).

    python -m kubebench.workloads.llm_server --port 8000 --max-batch 8 [--layers 2 --dim 128]

Endpoints: ``POST /v1/completions``, ``POST /v1/chat/completions`` (``stream``, ``max_tokens``,
``ignore_eos``, ``stream_options.include_usage``), ``GET /v1/models``, ``GET /health`` and ``GET
/metrics`` (Prometheus text). ``--port`` defaults to ``$KUBEBENCH_SERVER_PORT`` and ``--host`` to
``$KUBEBENCH_SERVER_HOST`` (what a ``kind: Serving`` job sets), else 127.0.0.1:8000.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid

from aiohttp import web

from .llm_engine import Engine, ModelConfig, Sequence, build_model, decode, encode
from .openai_prompt import MAX_BODY_BYTES, include_usage, max_tokens_of, prompt_of, read_body

MODEL_NAME = "kubebench-tiny"


class Server:
    """HTTP handlers over one engine."""

    def __init__(self, engine: Engine, name: str) -> None:
        self.engine, self.name = engine, name
        self.started = time.time()

    async def completions(self, request: web.Request) -> web.StreamResponse:
        """Both completion APIs; stream or not. A request whose client leaves is cancelled in the
        engine (as vLLM aborts one), so abandoned requests cost no decoding."""
        try:
            body = read_body(await self._read(request))
            chat = request.path.endswith("/chat/completions")
            prompt = prompt_of(body, chat)
            max_tokens = max_tokens_of(body)
            usage = include_usage(body)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            return _error(400, f"bad request: {type(e).__name__}: {e}")
        shape = self.engine.model.shape
        tokens = encode(prompt, shape.vocab)
        if max_tokens < 1 or max_tokens >= shape.seq_len:
            return _error(400, f"max_tokens must be between 1 and {shape.seq_len - 1}")
        tokens = tokens[-(shape.seq_len - max_tokens):]  # keep the end of a prompt that would not fit
        out: asyncio.Queue[int | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        seq = Sequence(tokens, max_tokens, lambda t: loop.call_soon_threadsafe(out.put_nowait, t),
                       ignore_eos=bool(body.get("ignore_eos", False)))
        self.engine.submit(seq)
        try:
            if body.get("stream"):
                return await self._stream(request, out, chat, len(tokens), usage)
            return await self._whole(request, out, chat, len(tokens))
        except ConnectionError:  # the client left: nothing to answer, and nothing more to decode
            self.engine.cancel(seq)
            return web.Response(status=499)
        except BaseException:  # the handler cancelled (its client left), or a bug: stop decoding either way
            self.engine.cancel(seq)
            raise

    @staticmethod
    async def _read(request: web.Request) -> bytes:
        try:
            return await request.read()
        except ConnectionError as e:  # the client left while sending: a ValueError (400) nobody reads
            raise ValueError("the client left") from e

    @staticmethod
    async def _next(request: web.Request, out: asyncio.Queue) -> int | None:
        """The next token, or None at the end; ConnectionResetError once the client has left (checked at
        every token, whether or not the server cancels handlers of lost connections)."""
        token = await out.get()
        if token is not None and (request.transport is None or request.transport.is_closing()):
            raise ConnectionResetError("the client left")
        return token

    async def _stream(self, request: web.Request, out: asyncio.Queue, chat: bool, prompt_tokens: int,
                      usage: bool) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        ident, produced = f"cmpl-{uuid.uuid4().hex[:12]}", 0
        while (token := await self._next(request, out)) is not None:
            produced += 1
            await response.write(_event(self._chunk(ident, chat, decode(token))))
        if usage:
            await response.write(_event({"id": ident, "object": _object(chat, True), "model": self.name, "choices": [],
                                         "usage": _usage(prompt_tokens, produced)}))
        await response.write(b"data: [DONE]\n\n")
        return response

    async def _whole(self, request: web.Request, out: asyncio.Queue, chat: bool, prompt_tokens: int) -> web.Response:
        text = []
        while (token := await self._next(request, out)) is not None:
            text.append(decode(token))
        choice = ({"index": 0, "message": {"role": "assistant", "content": "".join(text)}, "finish_reason": "length"}
                  if chat else {"index": 0, "text": "".join(text), "finish_reason": "length"})
        return web.json_response({"id": f"cmpl-{uuid.uuid4().hex[:12]}", "object": _object(chat, False),
                                  "model": self.name, "choices": [choice], "usage": _usage(prompt_tokens, len(text))})

    def _chunk(self, ident: str, chat: bool, text: str) -> dict:
        choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
        return {"id": ident, "object": _object(chat, True), "model": self.name, "choices": [choice]}

    async def models(self, request: web.Request) -> web.Response:
        """``/v1/models``: the one model served."""
        return web.json_response({"object": "list", "data": [{"id": self.name, "object": "model",
                                                              "created": int(self.started), "owned_by": "kubebench"}]})

    async def health(self, request: web.Request) -> web.Response:
        """``/health``: 200 once the model is loaded (the server listens only then)."""
        return web.Response(text="ok")

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus text: counters of requests, tokens, decode steps; gauges of running and waiting."""
        s, engine = self.engine.stats, self.engine
        lines = [
            ("counter", "kubebench_llm_requests_total", s["requests_total"]),
            ("counter", "kubebench_llm_requests_cancelled_total", s["requests_cancelled_total"]),
            ("counter", "kubebench_llm_generated_tokens_total", s["tokens_total"]),
            ("counter", "kubebench_llm_decode_steps_total", s["steps_total"]),
            ("counter", "kubebench_llm_decode_seconds_total", s["step_seconds_total"]),
            ("gauge", "kubebench_llm_requests_running", len(engine.running)),
            ("gauge", "kubebench_llm_requests_waiting", engine.waiting.qsize()),
        ]
        text = "".join(f"# TYPE {name} {kind}\n{name} {value}\n" for kind, name, value in lines)
        return web.Response(text=text, content_type="text/plain")


def _object(chat: bool, chunk: bool) -> str:
    return ("chat.completion" if chat else "text_completion") + (".chunk" if chunk and chat else "")


def _usage(prompt: int, completion: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _event(data: dict) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)


def make_app(engine: Engine, name: str = MODEL_NAME) -> web.Application:
    """The aiohttp application serving ``engine``."""
    server = Server(engine, name)
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post("/v1/completions", server.completions)
    app.router.add_post("/v1/chat/completions", server.completions)
    app.router.add_get("/v1/models", server.models)
    app.router.add_get("/health", server.health)
    app.router.add_get("/metrics", server.metrics)
    return app


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.llm_server", description=__doc__.split("\n")[0])
    p.add_argument("--host", default=os.environ.get("KUBEBENCH_SERVER_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("KUBEBENCH_SERVER_PORT") or 8000))
    p.add_argument("--max-batch", type=int, default=8, help="requests decoded together (KV-cache slots)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--max-seq", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1, help="PyTorch threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default=MODEL_NAME, help="model name on /v1/models")
    args = p.parse_args(argv)
    if args.dim % args.heads:
        p.error(f"--dim {args.dim} must be a multiple of --heads {args.heads}")
    if args.max_batch < 1:
        p.error("--max-batch must be at least 1")
    return args


def build_engine(args: argparse.Namespace) -> Engine:
    """The model with random weights, and its engine (started)."""
    import torch

    torch.set_num_threads(args.threads)
    cfg = ModelConfig(args.vocab, args.dim, args.layers, args.heads, args.max_seq)
    engine = Engine(build_model(cfg, args.seed), args.max_batch)
    engine.start()
    return engine


def main(argv: list[str] | None = None) -> None:
    """Load the model, then listen (so that /health answers only once it can serve)."""
    args = parse_args(argv)
    engine = build_engine(args)
    print(f"serving {args.name} on http://{args.host}:{args.port}/v1 (max batch {args.max_batch})", flush=True)
    web.run_app(make_app(engine, args.name), host=args.host, port=args.port, access_log=None, print=None,
                handler_cancellation=True)  # a client that leaves cancels its handler, which cancels its request
    engine.stop()


if __name__ == "__main__":
    main()
