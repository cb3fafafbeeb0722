"""The budgets of template code, each shared by all the renders of a plan (Jinja templates in
``sandbox``, Jsonnet in ``jsonnet``): the time spent in template code, and the characters the
templates make in all (a per-string limit alone lets 10,000 trials of 1,000,000 characters each
ask for 10 GB). Free of Jinja, so that a plan without templates never imports it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .. import limits
from ..errors import TemplateLimit

_local = threading.local()


@contextmanager
def time_budget(seconds: float | None = None) -> Iterator[None]:
    """Renders inside share one budget of template time (default: ``limits.RENDER_SECONDS``): the
    time spent in template code, not in what surrounds it. An inner budget never adds time."""
    seconds = float(limits.RENDER_SECONDS.value() if seconds is None else seconds)
    outer = getattr(_local, "left", None)
    _local.left = start = seconds if outer is None else min(outer, seconds)
    try:
        yield
    finally:
        _local.left = None if outer is None else outer - (start - _local.left)


@contextmanager
def spending() -> Iterator[float]:
    """Time spent inside counts against the budget in force (or a budget of its own); yields the
    deadline (``time.monotonic()``) by which the work must end."""
    with time_budget():
        started = time.monotonic()
        _local.deadline = started + _local.left
        try:
            yield _local.deadline
        finally:
            _local.deadline = None
            _local.left -= time.monotonic() - started


def out_of_time() -> TemplateLimit:
    """The error of a render past its time budget."""
    return TemplateLimit(f"rendering took longer than {limits.RENDER_SECONDS.value()} s (the limit on the "
                         f"template time of all the trials of a plan; {limits.RENDER_SECONDS.env} changes it)")


@contextmanager
def size_budget(chars: int | None = None) -> Iterator[None]:
    """Renders inside share one budget of rendered characters (default: ``limits.RENDER_CHARS``):
    what the templates of every trial of a plan make, in all. An inner budget never adds any."""
    limit = limits.RENDER_CHARS.value() if chars is None else chars
    outer, outer_limit = getattr(_local, "chars_left", None), getattr(_local, "chars_limit", None)
    _local.chars_left = start = limit if outer is None else min(outer, limit)
    _local.chars_limit = limit if outer_limit is None else min(outer_limit, limit)
    try:
        yield
    finally:
        _local.chars_left = None if outer is None else outer - (start - _local.chars_left)
        _local.chars_limit = outer_limit


@contextmanager
def plan_budget() -> Iterator[None]:
    """Both budgets of a plan: template time and rendered characters."""
    with time_budget(), size_budget():
        yield


def chars_left() -> int | None:
    """Characters the plan's renders may still make; None outside a plan (each string has its own limit)."""
    return getattr(_local, "chars_left", None)


def count_rendered(chars: int) -> None:
    """Count ``chars`` made by a render against the plan's budget in force (none outside a plan)."""
    left = getattr(_local, "chars_left", None)
    if left is not None:
        _local.chars_left = left - chars
        if _local.chars_left < 0:
            raise too_much()


def too_much() -> TemplateLimit:
    """The error of a plan whose renders made more than its budget of characters."""
    limit = getattr(_local, "chars_limit", None) or limits.RENDER_CHARS.value()
    return TemplateLimit(f"the templates of the plan's trials rendered more than {limit:,} "
                         f"characters in all (the limit on what a plan renders; {limits.RENDER_CHARS.env} changes it)")
