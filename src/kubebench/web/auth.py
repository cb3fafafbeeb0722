"""Who may change state: a bearer token compared in constant time, a read-only switch, and a cap on
request bodies that holds before anything is parsed.
"""

from __future__ import annotations

import secrets

from fastapi import HTTPException, Request

TOKEN_HEADER = "X-Kubebench-Token"
#: Largest body of a state-changing request (a spec with its parameter file fits many times over).
MAX_BODY_BYTES = 256 * 1024


def new_token() -> str:
    """A random token for a server started without one (printed at start)."""
    return secrets.token_urlsafe(24)


#: What a token may hold: visible ASCII. An HTTP header carries other characters only as bytes whose
#: encoding the client picks (curl sends UTF-8, the server reads Latin-1, a browser refuses to send
#: most of them), so such a token could never be presented.
TOKEN_RULE = "visible ASCII characters only (letters, digits, punctuation; no spaces, no accents)"


def check_token(token: str) -> str:
    """``token`` if it can be sent in a header as it is; ValueError naming the rule otherwise."""
    if not token or not all("!" <= c <= "~" for c in token):
        raise ValueError(f"the token must hold {TOKEN_RULE}: every client must be able to send it in a header")
    return token


def presented_token(request: Request) -> str | None:
    """The token of ``Authorization: Bearer …`` or of the ``X-Kubebench-Token`` header."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get(TOKEN_HEADER) or None


def require_writer(request: Request) -> None:
    """Dependency of every state-changing route: 403 in read-only mode, 401 without the right token."""
    state = request.app.state
    if state.read_only:
        raise HTTPException(403, "the server is read-only (started with --read-only): nothing can be changed")
    expected, given = state.token, presented_token(request)
    # no token configured: nobody may change state (never "anybody")
    if not expected or given is None or not secrets.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(401, "a valid token is needed to change state: send 'Authorization: Bearer <token>' "
                                 "(the token is printed when the server starts)",
                            headers={"WWW-Authenticate": "Bearer"})


class BodyLimit:
    """ASGI middleware: a request whose body is over ``limit`` bytes gets 413 before the app sees it.

    Both the declared ``Content-Length`` and the bytes actually sent count (a chunked body has no
    length to trust), so the body is read here, up to the limit, and handed on from memory.
    """

    def __init__(self, app, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _too_large(send, self.limit)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.limit:
                await _too_large(send, self.limit)
                return
        body, sent = b"".join(chunks), False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()  # after the body: wait for the disconnect, as the server would
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _too_large(send, limit: int) -> None:
    import json

    body = json.dumps({"detail": f"request body is larger than {limit // 1024} KiB"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
