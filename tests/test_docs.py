"""The docs say what exists: every relative link of README.md and docs/ names a file of the repository,
and every test a page cites (``test_…``, a function or a test file) is a test of the suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_TEST = re.compile(r"\b(test_\w*[A-Za-z0-9])\b(?!<)")


def _tests_in_the_suite() -> set[str]:
    names = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
    for path in (ROOT / "tests").rglob("*.py"):
        names |= set(re.findall(r"^\s*(?:async\s+)?def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
    return names


TESTS = _tests_in_the_suite()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file(page: Path) -> None:
    links = [link for link in _LINK.findall(page.read_text(encoding="utf-8"))
             if not re.match(r"[a-z][a-z0-9+.-]*:|#", link)]
    assert [link for link in links if not (page.parent / link.split("#")[0]).exists()] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cited_test_exists(page: Path) -> None:
    assert sorted({name for name in _TEST.findall(page.read_text(encoding="utf-8")) if name not in TESTS}) == []
