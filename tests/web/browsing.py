"""A Chromium page for the dashboard's browser tests: requests to other hosts are refused and
recorded, JS errors (and Plotly's warnings) are collected, and screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


@dataclass
class Browsing:
    """A browser page whose requests to other hosts are refused, and what it logged."""

    page: object
    artifacts: Path
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    allowed_statuses: set[int] = field(default_factory=set)

    def shot(self, name: str) -> Path:
        path = self.artifacts / f"web-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def assert_clean(self) -> None:
        assert not self.blocked, f"requests to other hosts: {self.blocked}"
        assert not self.errors, f"JS errors: {self.errors}"


@contextmanager
def browsing_page(browser, artifacts: Path, viewport: dict | None = None, color_scheme: str = "light"):
    """A new browser context (``viewport``, ``color_scheme``) and its page, watched as :class:`Browsing`."""
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900}, color_scheme=color_scheme)
    page = context.new_page()
    page.set_default_timeout(60_000)  # Plotly (4.6 MB) parses slowly on a loaded 2-core machine
    state = Browsing(page, artifacts)

    def route(request_route):
        host = urlsplit(request_route.request.url).hostname
        if host in ("127.0.0.1", "localhost") or request_route.request.url.startswith(("data:", "blob:")):
            request_route.continue_()
        else:
            state.blocked.append(request_route.request.url)
            request_route.abort()

    def console(message):
        if message.type in ("warning", "trace"):  # Plotly warns with console.trace
            state.warnings.append(message.text)
        if message.type != "error":
            return
        status = re.search(r"status of (\d{3})", message.text)
        if status and int(status.group(1)) in state.allowed_statuses:
            return  # an answer the test provoked on purpose (Chromium logs every HTTP error)
        state.errors.append(message.text)

    context.route("**/*", route)
    page.on("console", console)
    page.on("pageerror", lambda error: state.errors.append(f"uncaught: {error}"))
    try:
        yield state
    finally:
        context.close()
