"""What keeps other web sites out of the dashboard: only the host names it was started for are
answered (a DNS-rebinding page names its own host), and every answer forbids framing and sniffing,
with a Content-Security-Policy that lets pages load and run only this origin's code.

Inline scripts (the experiments page's prefetch, the API docs' start-up) are allowed by their hash,
computed from the page as sent, so no template has to know about the policy.
"""

from __future__ import annotations

import base64
import hashlib
import re
import socket
from collections.abc import Iterable

#: Names of this machine's loopback: what a browser on this machine sends as ``Host``.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_WILDCARD = ("", "0.0.0.0", "::")
_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc\s*=)[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)
_PAGE_POLICY = ("default-src 'self'; script-src 'self'{hashes}; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
                "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_OTHER_POLICY = "default-src 'none'; frame-ancestors 'none'"
_ALWAYS = ((b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"))


def allowed_hosts(bound: str | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The ``Host`` names to answer: loopback, the address the server listens on, and ``extra``.

    Listening on every address (``0.0.0.0``), this machine's name and addresses are added too: an
    address, or the machine's own name, is never what a rebinding page sends.
    """
    hosts = list(LOOPBACK_HOSTS)
    if bound in _WILDCARD:
        hosts += _machine_names()
    elif bound:
        hosts.append(_bracketed(bound))
    hosts += [_bracketed(h.strip().lower()) for h in extra if h.strip()]
    return list(dict.fromkeys(h.lower() for h in hosts))


def _machine_names() -> list[str]:
    import psutil

    names = [socket.gethostname(), socket.getfqdn()]
    for addresses in psutil.net_if_addrs().values():
        names += [_bracketed(a.address.split("%")[0]) for a in addresses
                  if a.family in (socket.AF_INET, socket.AF_INET6)]
    return names


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class SecurityHeaders:
    """ASGI middleware: frame and sniffing protection on every answer; a CSP on every HTML page
    (with the hashes of its inline scripts) and a closed one on other answers that set none."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        chunks: list[bytes] = []

        async def guarded(message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in dict(_ALWAYS)]
                headers += _ALWAYS
                if _is_html(headers) and scope["method"] != "HEAD":
                    start = {**message, "headers": headers}  # sent with the body, once its scripts are known
                    return
                if not any(k.lower() == b"content-security-policy" for k, _ in headers):
                    headers.append((b"content-security-policy", _OTHER_POLICY.encode()))
                await send({**message, "headers": headers})
            elif start is not None and message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    await _send_page(send, start, b"".join(chunks))
            else:
                await send(message)

        await self.app(scope, receive, guarded)


def _is_html(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(k.lower() == b"content-type" and v.lower().startswith(b"text/html") for k, v in headers)


async def _send_page(send, start: dict, body: bytes) -> None:
    hashes = "".join(f" 'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
                     for script in _INLINE_SCRIPT.findall(body))
    headers = [(k, v) for k, v in start["headers"] if k.lower() not in (b"content-security-policy", b"content-length")]
    headers += [(b"content-security-policy", _PAGE_POLICY.format(hashes=hashes).encode()),
                (b"content-length", str(len(body)).encode())]
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
