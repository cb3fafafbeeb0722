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

#: The dashboard's token (``kubebench serve``): no process that kubebench starts needs it.
TOKEN_VARIABLE = "KUBEBENCH_TOKEN"
#: Where results go: runners need these, jobs never (they write into their run's folders).
RUNNER_ONLY = ("KUBEBENCH_STORE", "KUBEBENCH_STORAGE")
MASK = "***"

# As SQLAlchemy reads a URL: the password runs from the first ':' after the user to the first '@'.
_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][\w+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]*)(?=@)")
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&](?:password|passwd|pwd)=)(?P<secret>[^&\s]*)", re.IGNORECASE)
_stores: set[str] = set()  # URLs of the stores this process opened, as given


def mask_url(url: str) -> str:
    """``url`` (or any text holding URLs) with each password replaced by ``***``.

    The same as SQLAlchemy's ``render_as_string(hide_password=True)`` for the password before the
    host, and also for a ``password=`` in the query (libpq reads one there).
    """
    text = _PASSWORD.sub(lambda m: m["head"] + (MASK if m["secret"] else ""), url)
    return _QUERY_PASSWORD.sub(lambda m: m["head"] + MASK, text)


def remember_store(url: str) -> None:
    """Note a store URL this process uses, so that no variable carrying it reaches a job."""
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
    found = _PASSWORD.search(url)
    return f"{found['head'].split('://', 1)[1]}{found['secret']}@" if found and found["secret"] else url
