"""Expand parameters into parameter points: grid (cartesian) or zip, then include/exclude."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Literal

from .. import limits
from ..errors import PlanError

Point = dict[str, object]
#: A point as a hashable value (see ``_key``).
_Key = tuple[tuple[str, object], ...]


def expand(
    parameters: Mapping[str, object],
    mode: Literal["grid", "zip"] = "grid",
    include: Sequence[Mapping[str, object]] = (),
    exclude: Sequence[Mapping[str, object]] = (),
    max_points: int | None = None,
) -> list[Point]:
    """Parameter points in a stable order; a list value is swept, a scalar is fixed.

    ``exclude`` drops every point matching all keys of one of its entries; ``include`` adds points
    (missing keys take the fixed values, or the first value of a swept list). The number of points
    is counted before any is made, and more than ``max_points`` (default: the limit in force,
    ``kubebench.limits.SWEEP_POINTS``) is a PlanError.
    """
    swept = {k: list(v) for k, v in parameters.items() if isinstance(v, list)}
    fixed = {k: v for k, v in parameters.items() if not isinstance(v, list)}
    empty = [k for k, v in swept.items() if not v]
    if empty:
        raise PlanError(f"parameter {empty[0]!r} is an empty list: nothing to sweep")
    _check_count(swept, mode, len(include), limits.SWEEP_POINTS.value() if max_points is None else max_points)
    # Points keep the spec's parameter order, which tables and exports show.
    points = [{k: combo[k] if k in combo else fixed[k] for k in parameters} for combo in _combine(swept, mode)]
    points = [p for p in points if not any(_matches(p, e) for e in exclude)]
    seen: dict[_Key, Point] = {}
    for point in points:
        if seen.setdefault(_key(point), point) is not point:
            # Equal points would be one trial under two names: same id, same runs.
            raise PlanError(f"the sweep repeats the parameter point {point}; list each value once")
    defaults = {k: v[0] if isinstance(v, list) else v for k, v in parameters.items()}
    for extra in include:
        point = {**defaults, **extra}
        if seen.setdefault(_key(point), point) is point:
            points.append(point)
    if not points:
        raise PlanError("the sweep is empty: `exclude` removed every parameter point")
    return points


def count_points(swept: Mapping[str, Sequence[object]], mode: str) -> int:
    """Points of the swept lists before include/exclude: the product of their lengths (grid), or
    their common length (zip)."""
    lengths = [len(v) for v in swept.values()]
    if mode == "zip":
        return max(lengths, default=1)
    return math.prod(lengths)


def _check_count(swept: dict[str, list[object]], mode: str, included: int, limit: int) -> None:
    count = count_points(swept, mode) + included
    if count > limit:
        if mode == "grid":
            shape = " × ".join(f"{len(v)} ({k})" for k, v in swept.items())
        else:
            shape = f"zip of {', '.join(swept)}"
        raise PlanError(f"parameters: the sweep has {count:,} parameter points ({shape}"
                        f"{f' + {included} included' if included else ''}), more than the limit of {limit:,}; "
                        f"sweep fewer values, or raise {limits.SWEEP_POINTS.env}")


def _key(point: Point) -> _Key:
    # Hashable and compared like the dicts themselves (1 == 1.0 == True), so a set finds repeats
    # in linear time; values are scalars, anything else is compared by its text.
    return tuple(sorted((k, v if isinstance(v, (bool, int, float, str, type(None))) else repr(v))
                        for k, v in point.items()))


def _combine(swept: dict[str, list[object]], mode: str) -> list[Point]:
    names = list(swept)
    if not swept:
        return [{}]
    if mode == "zip":
        lengths = {k: len(v) for k, v in swept.items()}
        if len(set(lengths.values())) > 1:
            raise PlanError(f"sweep: zip needs lists of equal length, got {lengths}")
        return [dict(zip(names, values)) for values in zip(*swept.values())]
    return [dict(zip(names, values)) for values in itertools.product(*swept.values())]


def _matches(point: Point, pattern: Mapping[str, object]) -> bool:
    return all(k in point and point[k] == v for k, v in pattern.items())
