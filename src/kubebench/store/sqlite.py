"""SQLite specifics that both ways of opening a store share (SQLAlchemy's engine and the sqlite3
reader): which file a URL names, and what SQLite's terse errors mean."""

from __future__ import annotations

from urllib.parse import parse_qsl

#: How long a writer waits for another one's lock (``?timeout=S`` in the URL sets another).
BUSY_TIMEOUT_S = 30
#: What SQLite's terse errors mean for someone running kubebench.
_HINTS = {
    "database is locked": "another process has held the store's write lock for longer than the busy timeout",
    "database or disk is full": "no space left for the store's file",
    "attempt to write a readonly database": "the store's file or folder is not writable",
    "disk I/O error": "the store's file could not be read or written",
}
_SCHEMES = ("sqlite", "sqlite+pysqlite")


def explain(message: str) -> str:
    """A SQLite error message with what it means, where we know."""
    hint = next((h for text, h in _HINTS.items() if text in message), None)
    return f"{message} ({hint})" if hint else message


def plain_file(url: str) -> tuple[str, float] | None:
    """The file and busy timeout of a plain SQLite URL (``sqlite:///path``, optionally ``?timeout=S``).

    None for anything else (another database, in-memory, encoded characters, other options): such
    URLs are left to SQLAlchemy, which reads them by its full rules.
    """
    scheme, separator, rest = url.partition(":///")
    path, _, query = rest.partition("?")
    if not separator or scheme not in _SCHEMES or path in ("", ":memory:") or "%" in path:
        return None
    options = dict(parse_qsl(query, keep_blank_values=True))
    if set(options) - {"timeout"}:
        return None
    try:
        return path, float(options.get("timeout", BUSY_TIMEOUT_S))
    except ValueError:
        return None
