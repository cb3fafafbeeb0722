"""The time budget of template code: one budget shared by all the renders of a plan (Jinja
templates in ``sandbox``, Jsonnet in ``jsonnet``). Free of Jinja, so that a plan without templates
never imports it.
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
