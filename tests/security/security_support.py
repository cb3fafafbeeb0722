"""What several security tests share: a tiny spec and a request sent exactly as written."""

from __future__ import annotations

from web_support import TINY  # noqa: F401  (the security tests' name for it)


def raw(url: str, method: str, path: str, token: str | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A request sent exactly as written (an HTTP client would normalise ``..`` and ``.`` away)."""
    import http.client

    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.putrequest(method, path, skip_host="Host" in (headers or {}))
        if token:
            conn.putheader("Authorization", f"Bearer {token}")
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def without_energy(info: dict) -> dict:
    """A run's info without what every run records about its energy (a figure's source, or why none)."""
    return {k: v for k, v in info.items() if k not in ("energy_source", "energy_unavailable")}
