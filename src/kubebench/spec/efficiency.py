"""Spec keys about what results are worth: ``prices:`` (what a run costs) and ``reference:`` (a
published figure to hold results against).

.. code-block:: yaml

    prices:
      pricing: spot                   # the column used (default on-demand)
      device_hour: {H100: {on-demand: 4.10, spot: 1.60}, A100: 1.29}   # USD per device-hour
      cpu_core_hour: {on-demand: 0.048, spot: 0.018}                    # USD per CPU-core-hour
      file: prices.yaml               # the same keys in a file (relative to the spec); the spec's win

    reference:
      - {metric: images_per_sec, value: 2470, unit: images/s, where: {workers: 1},
         source: "NVIDIA DeepLearningExamples, ResNet-50 v1.5, 1x A100 80GB, AMP, batch 256"}

A device row applies to GPUs whose name contains its key (case-insensitive; the longest key wins); a
number instead of columns is the price under every pricing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Union

from pydantic import Field, ValidationError, field_validator

from ..errors import SpecError
from .base import Model

Price = Union[float, dict[str, float]]
Scalar = Union[bool, int, float, str, None]


#: The highest price per device- or core-hour taken (USD): far above any real price, and low enough that
#: no cost computed from it overflows to ``inf`` (review 2026-12-02 N7).
MAX_PRICE_USD = 1e6


def _check_price(value: Price, where: str) -> Price:
    prices = value.values() if isinstance(value, dict) else [value]
    for price in prices:
        if isinstance(price, bool) or not (math.isfinite(price) and 0 <= price <= MAX_PRICE_USD):
            raise ValueError(f"{where}: a price must be a number of USD from 0 to {MAX_PRICE_USD:g}, got {price!r}")
    return value


class PriceTable(Model):
    """USD per device-hour (by device name) and per CPU-core-hour, in named columns."""

    pricing: str = Field("on-demand", min_length=1)
    device_hour: dict[str, Price] = Field(default_factory=dict)
    cpu_core_hour: Price | None = None

    @field_validator("device_hour")
    @classmethod
    def _devices(cls, value: dict[str, Price]) -> dict[str, Price]:
        for name, price in value.items():
            if not name.strip():
                raise ValueError("a device name must not be empty")
            _check_price(price, f"device_hour[{name!r}]")
        return value

    @field_validator("cpu_core_hour")
    @classmethod
    def _cores(cls, value: Price | None) -> Price | None:
        return value if value is None else _check_price(value, "cpu_core_hour")


class Prices(PriceTable):
    """The spec's ``prices:``: a table, from the spec and / or a file."""

    file: str | None = None


class Reference(Model):
    """A published figure with its source; results are reported as a fraction of it."""

    metric: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:/-]*$")
    value: float = Field(gt=0, allow_inf_nan=False)
    source: str = Field(min_length=1)
    unit: str = ""
    #: Parameters a trial must have for the figure to apply (``{workers: 1}``); empty: every trial.
    where: dict[str, Scalar] = Field(default_factory=dict)
    #: The gate of ``kubebench efficiency --fail-on reference``: the least fraction that passes.
    min_ratio: float = Field(0.95, gt=0, allow_inf_nan=False)


def load_prices(prices: Prices, base_dir: Path) -> PriceTable:
    """The table in force: the file's rows, then the spec's over them (SpecError for a bad file)."""
    if prices.file is None:
        return PriceTable(**prices.model_dump(exclude={"file"}, exclude_unset=True))
    from .load import parse_yaml, read_text

    path = Path(prices.file) if Path(prices.file).is_absolute() else base_dir / prices.file
    data, _ = parse_yaml(read_text(path, "prices"), str(path))
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a prices file is a mapping (pricing, device_hour, cpu_core_hour)")
    try:
        table = PriceTable(**data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SpecError(f"{path}: {where}: {first['msg']}") from e
    own = prices.model_dump(exclude={"file"}, exclude_unset=True)
    devices = {**table.device_hour, **own.pop("device_hour", {})}
    return table.model_copy(update={**own, "device_hour": devices})
