"""A file server on loopback for the data tests: byte ranges (``Range: bytes=a-b`` → 206), 404 for
what it does not hold, and faults on demand — a connection cut after N bytes, a server that stalls.

    with FileServer() as server:
        server.files["/d.tar"] = data
        server.cut["/d.tar"] = 1000      # its GETs close the connection once 1000 bytes of it are sent
        url = server.url("/d.tar")
"""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class FileServer:
    """``files``: path → bytes; ``cut``: path → bytes of it sent (over all GETs) before the GET that
    sends them is cut off, once;
    ``stall``: paths whose GETs send nothing for ``stall_s`` seconds; ``requests``: (path, Range) seen."""

    def __init__(self, ranges: bool = True) -> None:
        self.files: dict[str, bytes] = {}
        self.cut: dict[str, int] = {}
        self.stall: set[str] = set()
        self.stall_s = 30.0
        self.ranges = ranges
        self.requests: list[tuple[str, str | None]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        """The URL of ``path`` on this server."""
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def __enter__(self) -> "FileServer":
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(server: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(body=False)

        def do_GET(self) -> None:  # noqa: N802
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            path = self.path.split("?", 1)[0]
            asked = self.headers.get("Range")
            if body:
                server.requests.append((path, asked))
            data = server.files.get(path)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end, status = 0, len(data), 200
            match = _RANGE.match(asked or "") if server.ranges else None
            if match:
                start = int(match.group(1))
                end = min(len(data), int(match.group(2)) + 1) if match.group(2) else len(data)
                status = 206
            self.send_response(status)
            self.send_header("Content-Length", str(end - start))
            if server.ranges:
                self.send_header("Accept-Ranges", "bytes")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            self.end_headers()
            if not body:
                return
            if path in server.stall:
                time.sleep(server.stall_s)
            limit = server.cut.get(path)
            chunk = data[start:end]
            if limit is not None and len(chunk) >= limit:
                del server.cut[path]
                self.wfile.write(chunk[:limit])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if limit is not None:
                server.cut[path] = limit - len(chunk)
            self.wfile.write(chunk)

    return Handler
