"""Numbers as people read them: three significant digits with an SI prefix and the unit
(``8.94 M images/s``, ``182 µs``, ``329 MiB``), never scientific notation."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_PREFIXES = {-12: "p", -9: "n", -6: "µ", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}
_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
#: Units that already carry a prefix (ms, MB, GiB …) or are relative (%): no second prefix.
_PREFIXED = re.compile(r"^(?:[pnuµmkKMGTP]i?(?:s|B|b|Hz|W|J|bit)\b|%)")
#: Base units a prefix joins (``µs``, ``GHz``); other units are counts per something (``8.94 M images/s``).
_ATTACHED = re.compile(r"^(?:s|Hz|W|J|bit|b|FLOP/s|FLOPS|flop/s)$")
#: Units of metrics that declare none, from their name (telemetry: ``memory_peak_bytes``, ``cpu_percent_max``).
_NAME_UNITS = ((re.compile(r"(^|_)bytes($|_)"), "bytes"), (re.compile(r"(^|_)percent($|_)"), "%"),
               (re.compile(r"(?<!_per)(_seconds|_secs|_sec|_s)$"), "s"), (re.compile(r"_ms$"), "ms"))


def metric_unit(name: str, declared: str = "") -> str:
    """The declared unit, else one read from the metric's name (``*_bytes``, ``*_percent*``, ``*_seconds``)."""
    if declared:
        return declared
    return next((unit for pattern, unit in _NAME_UNITS if pattern.search(name)), "")


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, an SI prefix and ``unit``; "–" for none/nan.

    Bytes get binary prefixes (``329 MiB``). A unit that is already prefixed or relative (``ms``,
    ``%``) gets none. Without a unit, values from 0.001 to 1 keep plain decimals: ``0.42``, not ``420 m``.
    """
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return "–"
    if unit in ("bytes", "B"):
        return _binary(value, digits)
    suffix = f" {unit}" if unit else ""
    if value == 0:
        return "0" + suffix
    if _PREFIXED.match(unit) or (not unit and 1e-3 <= abs(value) < 1):
        return _plain(value, digits) + suffix
    exponent = 3 * math.floor(math.log10(abs(value)) / 3)
    mantissa = float(f"{value / 10**exponent:.{digits}g}")
    if abs(mantissa) >= 1000:
        exponent, mantissa = exponent + 3, mantissa / 1000
    if exponent not in _PREFIXES:  # beyond peta or below pico: nothing reads better than an exponent
        return f"{value:.{digits - 1}e}{suffix}"
    prefix = _PREFIXES[exponent]
    if _ATTACHED.match(unit):  # 182 µs, 3.2 GHz
        return f"{_plain(mantissa, digits)} {prefix}{unit}"
    return " ".join(part for part in (_plain(mantissa, digits), prefix, unit) if part)  # 8.94 M images/s


def short(value: float | None, unit: str = "", digits: int = 3) -> str:
    """:func:`si` for a table whose header names the unit: the prefix only (``8.94 M``), except for
    the units a prefix joins and bytes (``182 µs``, ``322 MiB``), which read wrong without theirs."""
    if unit in ("bytes", "B") or _ATTACHED.match(unit):
        return si(value, unit, digits)
    return si(value, "", digits)


def percent(value: float | None, digits: int = 1) -> str:
    """``0.123`` as ``12.3%``; "–" for none/nan."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 100:.{digits}f}%"


def _binary(value: float, digits: int) -> str:
    size, index = abs(value), 0
    while size >= 1024 and index < len(_BINARY) - 1:
        size, index = size / 1024, index + 1
    sign = "-" if value < 0 else ""
    if index == 0:
        return f"{sign}{_plain(size, digits)} B"
    return f"{sign}{_plain(float(f'{size:.{digits}g}'), digits)} {_BINARY[index]}"


def _plain(value: float, digits: int) -> str:
    """``digits`` significant digits in positional notation (no exponent)."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def si_range(low: float | None, high: float | None, unit: str = "") -> str:
    """``3.39 … 3.41 M ops/s``: an interval with its prefix and unit written once when both ends share
    them (``182 µs … 1.20 ms`` otherwise); "–" when either end is missing."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "–"
    a, b = si(low, unit), si(high, unit)
    number_a, _, suffix_a = a.partition(" ")
    number_b, _, suffix_b = b.partition(" ")
    if suffix_a == suffix_b and suffix_a:
        return f"{number_a} … {number_b} {suffix_a}"
    return f"{a} … {b}"


def short_range(low: float | None, high: float | None, unit: str = "") -> str:
    """:func:`si_range` for a column whose header names the unit (as :func:`short` is for :func:`si`)."""
    return si_range(low, high, unit if unit in ("bytes", "B") or _ATTACHED.match(unit) else "")


def header_unit(unit: str) -> str:
    """The unit a column header names for :func:`short` cells ("" for those whose cells carry it)."""
    return "" if unit in ("bytes", "B") or _ATTACHED.match(unit) else unit


@dataclass(frozen=True)
class AxisScale:
    """How a chart axis shows values of one unit: multiplied by ``factor``, titled with ``unit``
    (``ms`` for seconds below one, ``MiB`` for bytes), and with SI tick labels (``3.4M``) for counts."""

    factor: float
    unit: str
    tickformat: str = ""


def axis_scale(values, unit: str = "") -> AxisScale:
    """The :class:`AxisScale` of an axis of ``values`` in ``unit`` (the largest finite value decides)."""
    known = [abs(v) for v in values if v is not None and not isinstance(v, bool) and math.isfinite(v)]
    top = max(known, default=0.0)
    if unit in ("bytes", "B"):
        index = 0
        while top >= 1024 and index < len(_BINARY) - 1:
            top, index = top / 1024, index + 1
        return AxisScale(1024.0 ** -index, _BINARY[index])
    if _PREFIXED.match(unit) or not top:
        return AxisScale(1.0, unit)
    if _ATTACHED.match(unit):
        exponent = max(-12, min(0 if unit == "s" else 15, 3 * math.floor(math.log10(top) / 3)))
        return AxisScale(10.0 ** -exponent, _PREFIXES[exponent] + unit)
    return AxisScale(1.0, unit, "~s" if top >= 1000 else "")


def axis_title(metric: str, unit: str) -> str:
    """``ttft_p99 (ms)``: a short axis title, the unit in brackets."""
    return f"{metric} ({unit})" if unit else metric


def plural(n: int, noun: str, plural_form: str = "") -> str:
    """``1 trial``, ``2 trials`` (``plural_form`` for nouns that take no plain ``s``)."""
    return f"{n} {noun if n == 1 else plural_form or noun + 's'}"
