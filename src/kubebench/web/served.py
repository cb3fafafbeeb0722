"""Serving a file from the descriptor it was opened (and checked) with, never from its path again.

The response is bounded by the size the file had when it was opened: a log that a job is still
writing is sent up to that size, with a ``Content-Length`` that holds. A single byte range
(``Range: bytes=a-b``, ``a-`` or ``-n``) is answered 206; several ranges, or a malformed header, are
ignored (the whole file, as RFC 9110 allows); a range past the end is 416.
"""

from __future__ import annotations

import os
from email.utils import formatdate
from urllib.parse import quote

import anyio
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

CHUNK = 64 * 1024


class DescriptorResponse(Response):
    """The bytes ``[start, size)`` of the open file ``fd`` (owned: closed once sent), or a range of them;
    ``prefix`` is sent first (then ranges are ignored)."""

    def __init__(self, fd: int, size: int, mtime: float, media_type: str, headers: dict[str, str] | None = None,
                 start: int = 0, filename: str | None = None, disposition: str = "attachment",
                 prefix: bytes = b"") -> None:
        self.fd, self.start, self.end, self.prefix = fd, start, size, prefix
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        self.init_headers(headers)
        self.headers["accept-ranges"] = "bytes"
        self.headers["content-length"] = str(len(prefix) + size - start)
        self.headers["last-modified"] = formatdate(mtime, usegmt=True)
        self.headers["etag"] = f'"{int(mtime * 1e6):x}-{size:x}"'
        if filename is not None:
            quoted = quote(filename)
            self.headers["content-disposition"] = (f"{disposition}; filename*=utf-8''{quoted}" if quoted != filename
                                                   else f'{disposition}; filename="{filename}"')

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            status, start, end, headers = self._range(Headers(scope=scope))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            if scope["method"].upper() == "HEAD" or status == 416:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            async with anyio.create_task_group() as group:
                async def body() -> None:
                    await self._send_body(send, start, end)
                    group.cancel_scope.cancel()

                async def disconnect() -> None:  # a client gone: stop reading the file
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(body)
                group.start_soon(disconnect)
        finally:
            os.close(self.fd)

    async def _send_body(self, send: Send, start: int, end: int) -> None:
        if self.prefix:
            await send({"type": "http.response.body", "body": self.prefix, "more_body": start < end})
        position = start
        while position < end:
            chunk = await anyio.to_thread.run_sync(os.pread, self.fd, min(CHUNK, end - position), position)
            if not chunk:  # truncated while being sent: the connection ends short of Content-Length
                raise OSError(f"the file shrank to {position} bytes while it was sent")
            position += len(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": position < end})
        if start == end and not self.prefix:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _range(self, request: Headers) -> tuple[int, int, int, list[tuple[bytes, bytes]]]:
        """Status, first and last+1 byte to send, and the headers, for the request's Range."""
        asked = None if self.prefix else request.get("range")  # a prefixed (display) answer has no ranges
        if_range = request.get("if-range")
        current = if_range is None or if_range == self.headers["etag"]  # a changed file: the whole of it
        wanted = _single_range(asked, self.end) if asked and current else None
        if wanted is None:
            return 200, self.start, self.end, self.raw_headers
        headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        if wanted == "unsatisfiable":
            return 416, 0, 0, [*headers, (b"content-range", f"bytes */{self.end}".encode()), (b"content-length", b"0")]
        first, last = wanted
        return 206, first, last + 1, [*headers, (b"content-range", f"bytes {first}-{last}/{self.end}".encode()),
                                      (b"content-length", str(last + 1 - first).encode())]


def _single_range(header: str, size: int) -> tuple[int, int] | str | None:
    """``(first, last)`` of one ``bytes=`` range, "unsatisfiable", or None (ignore the header)."""
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash or not (first.isdigit() or last.isdigit()) or (first and not first.isdigit()) \
            or (last and not last.isdigit()):
        return None
    if not first:  # the last n bytes
        n = int(last)
        return "unsatisfiable" if n == 0 or size == 0 else (max(0, size - n), size - 1)
    start = int(first)
    if start >= size:
        return "unsatisfiable"
    end = min(int(last), size - 1) if last else size - 1
    return None if end < start else (start, end)
