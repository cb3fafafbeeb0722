"""Time in tests: every timeout a test sets is scaled by one factor, and waits poll a condition.

``KUBEBENCH_TEST_TIME_FACTOR`` (default 1) widens every timeout of the suite at once on a slow or
busy machine (e.g. ``KUBEBENCH_TEST_TIME_FACTOR=3`` under a CPU hog). Fixed sleeps are not used to
wait for something to happen: ``wait_for`` polls the condition until a scaled deadline.
"""

from __future__ import annotations

import os
import time
from typing import Callable, TypeVar

T = TypeVar("T")


def time_factor() -> float:
    """The factor from ``KUBEBENCH_TEST_TIME_FACTOR`` (at least 1: it only widens)."""
    raw = os.environ.get("KUBEBENCH_TEST_TIME_FACTOR", "").strip()
    try:
        factor = float(raw) if raw else 1.0
    except ValueError:
        raise ValueError(f"KUBEBENCH_TEST_TIME_FACTOR={raw!r} is not a number") from None
    return max(factor, 1.0)


def scaled(seconds: float) -> float:
    """``seconds`` times the time factor: the timeout to give anything a test waits for."""
    return seconds * time_factor()


def wait_for(condition: Callable[[], T], timeout: float = 30, what: str = "the condition", every: float = 0.02) -> T:
    """Poll ``condition()`` until it returns a true value, and return that value; fail (AssertionError)
    after ``timeout`` seconds times the time factor."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {scaled(timeout):.1f} s waiting for {what}")
        time.sleep(every)
