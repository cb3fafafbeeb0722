"""Expand parameters into parameter points: grid (cartesian) or zip, then include/exclude."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Literal

from ..errors import PlanError

Point = dict[str, object]


def expand(
    parameters: Mapping[str, object],
    mode: Literal["grid", "zip"] = "grid",
    include: Sequence[Mapping[str, object]] = (),
    exclude: Sequence[Mapping[str, object]] = (),
) -> list[Point]:
    """Parameter points in a stable order; a list value is swept, a scalar is fixed.

    ``exclude`` drops every point matching all keys of one of its entries; ``include`` adds points
    (missing keys take the fixed values, or the first value of a swept list).
    """
    swept = {k: list(v) for k, v in parameters.items() if isinstance(v, list)}
    fixed = {k: v for k, v in parameters.items() if not isinstance(v, list)}
    empty = [k for k, v in swept.items() if not v]
    if empty:
        raise PlanError(f"parameter {empty[0]!r} is an empty list: nothing to sweep")
    # Points keep the spec's parameter order, which tables and exports show.
    points = [{k: combo[k] if k in combo else fixed[k] for k in parameters} for combo in _combine(swept, mode)]
    points = [p for p in points if not any(_matches(p, e) for e in exclude)]
    defaults = {k: v[0] if isinstance(v, list) else v for k, v in parameters.items()}
    for extra in include:
        point = {**defaults, **extra}
        if point not in points:
            points.append(point)
    if not points:
        raise PlanError("the sweep is empty: `exclude` removed every parameter point")
    for i, point in enumerate(points):
        if point in points[:i]:
            # Equal points would be one trial under two names: same id, same runs.
            raise PlanError(f"the sweep repeats the parameter point {point}; list each value once")
    return points


def _combine(swept: dict[str, list], mode: str) -> list[Point]:
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
