"""The datasets an experiment's trials read (schema 8): their identity (cache key and checksum), and
the time the experiment spent on them, apart from its runs' (see kubebench.data). No SQLAlchemy
here: the data step builds these before it hands them to the store."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import field_validator

from .records import Record


class DataRecord(Record):
    """One dataset of an experiment: what it is, which trials read it, what it cost the experiment."""

    experiment_id: str
    name: str
    key: str
    #: ``sha256:<hex>`` of a fetched file, ``tree-sha256:<hex>`` of what a prepare step wrote.
    checksum: str
    source: Literal["url", "prepare"]
    #: The URL, or the prepare step's command line.
    origin: str
    trials: list[str]
    files: int
    bytes: int
    #: Seconds the experiment spent on it (waiting for another's lock, checking, preparing), all starts.
    seconds: float
    #: The experiment prepared it (at least once), rather than finding it ready.
    prepared: bool
    recorded_at: float

    @field_validator("trials", mode="before")
    @classmethod
    def _json_text(cls, value: object) -> object:
        return json.loads(value) if isinstance(value, str) else value


def changed_message(experiment_id: str, name: str) -> str:
    """Why a resumed experiment cannot read other data than its first runs read."""
    return (f"experiment {experiment_id!r} was started with other data for dataset {name!r} (its cache key "
            "changed); resume it with the same data, or run under a new --id")
