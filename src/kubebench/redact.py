"""Secrets kept out of what kubebench shows and of what it hands to the processes it starts.

Two secrets matter: the store URL's password (a PostgreSQL store is shared by every runner, and its
password gives write access to all results) and the dashboard's token (it launches processes).
:func:`mask_url` is the one way a store URL is shown (printed lines, runner logs, errors, the web
API); :func:`job_environment` is the environment every job and post-processor starts from, and
:func:`runner_environment` the one a dashboard-launched runner starts from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote, unquote_plus

#: The dashboard's token (``kubebench serve``): no process that kubebench starts needs it.
TOKEN_VARIABLE = "KUBEBENCH_TOKEN"
#: Where results go: runners need these, jobs never (they write into their run's folders).
RUNNER_ONLY = ("KUBEBENCH_STORE", "KUBEBENCH_STORAGE")
MASK = "***"

#: Keys whose value is a secret, in a URL's query (libpq reads ``password`` and ``sslpassword`` there)
#: or a libpq connection string (``host=db password='my pw'``): any key that ends so, ``?password=``,
#: ``&sslpassword=``, ``;pwd=``, ``?db_secret=``, ``&access_token=`` …; a value in quotes may hold spaces.
_QUERY_SECRET = re.compile(r"(?P<head>(?:^|[?&;\s])[\w.-]*(?:password|passwd|pwd|secret|token)\s*=\s*)"
                           r"(?P<secret>'(?:[^'\\]|\\.)*'|[^&;#\s]*)", re.IGNORECASE)
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-_")
#: Where a URL's user name ends (SQLAlchemy: ``[^:/]*``; here not across an ``@`` or a line either).
_USER_END = re.compile(r"[:/@\n]")
#: Where a password in free text ends (SQLAlchemy: at the first ``@``): a ``/`` or a line's end first
#: means a host's port and path (``h:5432/db … user@example``), not a password; the password of a store
#: this process opened is masked whatever it holds (:func:`_mask_known`).
_PASSWORD_STOP = ("/", "\n")
_stores: set[str] = set()  # URLs of the stores this process opened, as given


def mask_url(url: str) -> str:
    """``url`` (or any text holding URLs) with each password replaced by ``***``, in time linear in
    its length (review 2026-12-02 N14: the regular expression before was quadratic).

    As SQLAlchemy reads a URL, the password runs from the first ``:`` after the user name to the first
    ``@`` (spaces included; here not across a ``/`` or a line's end); the result is SQLAlchemy's
    ``render_as_string(hide_password=True)`` for such a URL. Secrets in the query (``password=``,
    ``sslpassword=``, any key ending in password, pwd, secret or token) are hidden up to ``&``, ``;``,
    ``#`` or a space; the secrets of the stores this process opened are hidden wherever they appear
    after ``:`` or ``=`` (a query value with a space in it).
    """
    text = _mask_known(url)
    text = _mask_userinfo(text)
    return _QUERY_SECRET.sub(lambda m: m["head"] + MASK, text)


def _mask_userinfo(text: str) -> str:
    """Each ``scheme://user:password@`` with the password masked; one pass over ``text``: every search
    starts where the last one stopped, and the next ``@`` and line end are looked up once per stretch."""
    out, copied, start = [], 0, 0
    at, stops = _NextFinder(text, "@"), [_NextFinder(text, stop) for stop in _PASSWORD_STOP]
    while (sep := text.find("://", start)) >= 0:
        begin = sep
        while begin > start and text[begin - 1] in _SCHEME_CHARS:
            begin -= 1
        start = sep + 3
        if begin == sep or not text[begin].isalpha():
            continue
        end = _USER_END.search(text, start)
        if end is None or text[end.start()] != ":":
            continue
        colon = end.start()
        close = at.after(colon)
        if close < 0 or any(0 <= stop.after(colon) < close for stop in stops):
            start = colon + 1
            continue
        if close > colon + 1:
            out += [text[copied:colon + 1], MASK]
            copied = close
        start = close + 1
    return "".join(out) + text[copied:] if out else text


class _NextFinder:
    """The first ``needle`` at or after a position, for positions that only grow: linear in all."""

    def __init__(self, text: str, needle: str) -> None:
        self.text, self.needle, self.since, self.found = text, needle, 0, -2

    def after(self, position: int) -> int:
        if self.found == -1 and position >= self.since:
            return -1  # none after an earlier position: none after this one
        if self.found < position:
            self.since, self.found = position, self.text.find(self.needle, position)
        return self.found


def _mask_known(text: str) -> str:
    """The secrets of the stores this process opened, masked where they follow ``:`` (before ``@``) or ``=``."""
    for url in _stores:
        for head, secret, tail in sorted(_secrets(url), key=lambda s: -len(s[1])):  # "my secret" before "my"
            if secret and f"{head}{secret}{tail}" in text:
                text = text.replace(f"{head}{secret}{tail}", f"{head}{MASK}{tail}")
    return text


def _secrets(url: str) -> list[tuple[str, str, str]]:
    """A store URL's secrets as they may appear in text: ``:password@`` and ``key=value`` of secret keys,
    as given and percent-decoded (as the store's driver reads them)."""
    found = [(":", password, "@") for _, password in _userinfo(url)]
    found += [("=", match["secret"], "") for match in _QUERY_SECRET.finditer(url)]
    return found + [(head, decoded, tail) for head, secret, tail in found
                    for decoded in {unquote(secret), unquote_plus(secret)} if decoded != secret]


def _userinfo(url: str) -> list[tuple[str, str]]:
    """``(user, password)`` of each ``scheme://user:password@`` in ``url``, as written."""
    masked = _mask_userinfo(url)
    if masked == url:
        return []
    head = masked.split(MASK, 1)[0]
    return [(head, url[len(head):url.index("@", len(head))])]


def remember_store(url: str) -> None:
    """Note a store URL this process uses, so that no variable carrying it reaches a job, and its
    secrets are masked wherever they are shown."""
    if mask_url(url) != url:  # only a URL with a secret in it is worth hiding
        _stores.add(url)


def job_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less what a job must not see: the token, the store and storage URLs, and any
    variable that carries the URL of a store this process opened (``DATABASE_URL=…`` given as ``--store``)."""
    hidden = {TOKEN_VARIABLE, *RUNNER_ONLY}
    return {key: value for key, value in environ.items() if key not in hidden and not _carries_store(value)}


def runner_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less the dashboard's token: a launched runner needs the store, never the token."""
    return {key: value for key, value in environ.items() if key != TOKEN_VARIABLE}


def _carries_store(value: str) -> bool:
    return any(url in value for url in _stores) or any(_secret_of(url) in value for url in _stores)


def _secret_of(url: str) -> str:
    """``user:password@`` of a store URL: in any variable, it is the store's credential."""
    found = _userinfo(url)
    if not found or not found[0][1]:
        return url
    head, password = found[0]
    return f"{head.split('://', 1)[1]}{password}@"
