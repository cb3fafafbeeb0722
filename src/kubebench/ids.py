"""The one grammar of the ids kubebench stores and serves: experiments, trials and runs.

An id becomes a folder name (``<experiments root>/<experiment>/<run>``), a Kubernetes label value
(``kubebench.io/experiment``), a URL path segment and a store key, so it must be safe as all four:
1 to 63 lowercase letters, digits, ``-`` and ``.``, starting and ending with a letter or a digit.
That excludes ``.``, ``..``, ``/``, absolute paths, leading dashes (read as options) and control
characters. Generated ids fit it (``<name slug, ≤ 40>-<YYYYMMDDHHmm>-<4 random>``; trial and run
ids are hex digests); ``kubebench run --id``, every command and route taking an id, and the store
check it here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .errors import IdError

#: The grammar, as a regular expression (a Kubernetes label value, lowercase, without ``_``).
PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$"
MAX_LENGTH = 63
RULE = ("1 to 63 lowercase letters, digits, '-' and '.', starting and ending with a letter or a digit "
        "(a Kubernetes label value)")
_ID = re.compile(PATTERN.removesuffix("$") + r"\Z")  # `$` would also match before a final newline


def is_valid(value: object) -> bool:
    """Whether ``value`` is an id of the grammar."""
    return isinstance(value, str) and _ID.match(value) is not None


def validator(what: str) -> Callable[[str], str]:
    """A pydantic validator of ids (for typed request parameters): ValueError naming the rule."""

    def valid(value: str) -> str:
        try:
            return check(value, what)
        except IdError as e:
            raise ValueError(str(e)) from None

    return valid


def check(value: str, what: str = "experiment id") -> str:
    """``value`` if it is a valid id, else an IdError that names the rule."""
    if not is_valid(value):
        shown = repr(value) if len(value) <= 80 else repr(value[:80]) + "…"
        raise IdError(f"{what} {shown} is not valid: an id is {RULE}")
    return value
