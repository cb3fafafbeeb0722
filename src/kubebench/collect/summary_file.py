"""A load tool's result file read as a stream, into a document small whatever the file's size.

The interop post-processors (:mod:`.interop`) need a summary: a few dozen numbers, most of them in
objects. The tools also write per-request lists into the same file (vLLM's ``ttfts``, ``itls``,
``errors``; GuideLLM's request samples), and a file of 200 MB read whole with ``json.loads`` held
about 5× its size in memory (review 2026-12-02 N21). Here ijson's event stream is built into a
document where

- a list of plain values keeps only its length and how many of them are true (:class:`ScalarList`):
  what ``errors`` is counted by;
- a list of objects or lists keeps its first :data:`MAX_ITEMS` (GuideLLM's benchmarks), the rest
  skipped without being built;
- at most :data:`MAX_VALUES` values are kept, :data:`MAX_DEPTH` levels deep, and a string keeps its
  first :data:`MAX_CHARS` characters;

so memory stays bounded by these numbers (and by the longest single string in the file), not by the
file's size. Numbers are read as floats (an integer too large for one is refused by the parsers).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PostprocessError
from ..limits import Limit
from ..output_files import open_output

MAX_ITEMS, MAX_VALUES, MAX_DEPTH, MAX_CHARS = 256, 200_000, 64, 4096


@dataclass(frozen=True)
class ScalarList:
    """A list of plain values, as its length and the number of its true values (non-empty, non-zero)."""

    count: int
    truthy: int


class _Frame:
    """A container being built: an object (``key`` is the key of the value to come) or a list."""

    __slots__ = ("value", "key", "count", "truthy")

    def __init__(self, value: dict | list) -> None:
        self.value, self.key, self.count, self.truthy = value, None, 0, 0

    def done(self) -> Any:
        if isinstance(self.value, list) and not self.value:
            return ScalarList(self.count, self.truthy)
        return self.value


def load_summary(path: Path, limit: Limit) -> dict[str, Any]:
    """The JSON object in ``path`` (a file a workload wrote, opened safely), pruned as the module says;
    PostprocessError naming the file when it is larger than ``limit``, no JSON, or no object."""
    from ijson import JSONError, basic_parse

    most = limit.value()
    with open_output(path) as f:
        size = f.seek(0, 2)
        f.seek(0)
        if size > most:
            raise PostprocessError(f"{path.parent.name}/{path.name} is larger than {most:,} bytes (the limit; "
                                   f"{limit.env} changes it)")
        try:
            document = _build(basic_parse(f, use_float=True, buf_size=16_384))
        except PostprocessError as e:
            raise PostprocessError(f"{path.name}: {e}") from e
        except (JSONError, ValueError) as e:
            raise PostprocessError(f"{path.name}: not JSON: {e}") from e
        except OSError as e:
            raise PostprocessError(f"{path.name}: cannot read it: {e.strerror or e}") from e
    if not isinstance(document, dict):
        raise PostprocessError(f"{path.name}: expected a JSON object")
    return document


def _keep(kept: int) -> int:
    if kept >= MAX_VALUES:
        raise PostprocessError(f"more than {MAX_VALUES:,} values outside lists: not a load tool's summary")
    return kept + 1


def _build(events) -> Any:
    stack: list[_Frame] = []
    skip, kept = 0, 0
    root: Any = None
    for event, value in events:
        if skip:  # inside a container left out: only its end matters
            skip += 1 if event in ("start_map", "start_array") else -1 if event in ("end_map", "end_array") else 0
            continue
        if event == "map_key":
            stack[-1].key = value
            continue
        if event in ("end_map", "end_array"):
            value = stack.pop().done()
        elif event in ("start_map", "start_array"):
            parent = stack[-1] if stack else None
            if parent is not None and isinstance(parent.value, list) and len(parent.value) >= MAX_ITEMS:
                skip = 1
                continue
            if len(stack) >= MAX_DEPTH:
                raise PostprocessError(f"nested more than {MAX_DEPTH} levels deep: not a load tool's summary")
            kept = _keep(kept)
            stack.append(_Frame({} if event == "start_map" else []))
            continue
        else:  # a plain value
            if stack and isinstance(stack[-1].value, list):  # counted, not kept
                stack[-1].count += 1
                stack[-1].truthy += bool(value)
                continue
            kept = _keep(kept)
            if isinstance(value, str) and len(value) > MAX_CHARS:
                value = value[:MAX_CHARS]
        if not stack:
            root = value
        elif isinstance(stack[-1].value, dict):
            stack[-1].value[stack[-1].key] = value
        else:
            stack[-1].value.append(value)
    return root
