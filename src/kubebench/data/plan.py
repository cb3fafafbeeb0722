"""The datasets of an experiment (pure): the spec's ``data:`` rendered for every trial, one item per
dataset name, with the trials that read it.

A dataset's strings may use the trial's parameters, so one entry of the spec can stand for several
datasets (``jpegs-{{ images }}``). Two trials that render one name to two definitions would share
one folder for different data: that is refused, naming both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from .. import ids
from ..errors import SpecError
from ..plan.plan import Trial
from ..render.templating import render_string
from ..spec.data import DatasetSpec, DataSpec, PrepareStep


@dataclass(frozen=True)
class Fetch:
    """A file fetched from ``url``, verified by ``sha256`` (or its line in ``checksums``)."""

    name: str
    url: str
    sha256: str | None
    checksums: str | None
    into: str
    unpack: bool
    timeout: float
    retries: int

    def definition(self) -> dict[str, Any]:
        """What defines the data (not how patiently it is fetched): the part of its cache key."""
        return {"source": "url", "url": self.url, "into": self.into, "unpack": self.unpack}

    @property
    def origin(self) -> str:
        """Where the data comes from, for listings."""
        return self.url


@dataclass(frozen=True)
class Step:
    """A command that fills the dataset's folder (``KUBEBENCH_DATA_PATH``)."""

    name: str
    command: tuple[str, ...]
    image: str | None
    env: tuple[tuple[str, str], ...]
    resources: tuple[tuple[str, str], ...]
    inputs: tuple[str, ...]
    timeout: float
    retries: int

    def definition(self) -> dict[str, Any]:
        """The rendered command, image and environment: the part of its cache key besides its inputs."""
        return {"source": "prepare", "command": list(self.command), "image": self.image, "env": dict(self.env)}

    @property
    def origin(self) -> str:
        """The command, for listings."""
        return " ".join(self.command)


Source = Union[Fetch, Step]


@dataclass(frozen=True)
class DataItem:
    """One dataset of the experiment and the trials (ids) that read it."""

    source: Source
    trials: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        """The dataset's folder under the data root."""
        return self.source.name


def plan_data(data: DataSpec | None, trials: Sequence[Trial]) -> list[DataItem]:
    """Every dataset the trials read, in the spec's order, each once (see the module's docstring)."""
    if data is None or data.empty:
        return []
    found: dict[str, tuple[Source, list[str], Trial]] = {}
    for trial in trials:
        context = {**trial.params, "params": dict(trial.params)}
        rendered: list[Source] = [_fetch(d, context, trial) for d in data.datasets]
        rendered += [_step(s, context, trial) for s in data.prepare]
        for source in rendered:
            seen = found.get(source.name)
            if seen is None:
                found[source.name] = (source, [trial.id], trial)
            elif seen[0] != source:
                raise SpecError(f"data: dataset {source.name!r} would hold different data for trials "
                                f"{_label(seen[2])} and {_label(trial)}: put the parameters it depends on "
                                "in its name (e.g. name: \"jpegs-{{ images }}\")")
            elif trial.id not in seen[1]:
                seen[1].append(trial.id)
    return [DataItem(source, tuple(trial_ids)) for source, trial_ids, _ in found.values()]


def _fill(text: str, context: dict[str, Any], where: str, trial: Trial) -> str:
    value = render_string(text, context, f"data.{where} (trial {_label(trial)})")
    if "\0" in value:
        raise SpecError(f"data.{where} (trial {_label(trial)}): the value rendered holds a NUL character")
    return value


def _name(text: str, context: dict[str, Any], where: str, trial: Trial) -> str:
    name = _fill(text, context, where, trial)
    if not ids.is_valid(name):
        raise SpecError(f"data.{where} (trial {_label(trial)}): dataset name {name!r} is not valid: a name is "
                        f"{ids.RULE}; it names a folder of the data root")
    return name


def _fetch(spec: DatasetSpec, context: dict[str, Any], trial: Trial) -> Fetch:
    where = f"datasets[{spec.name}]"
    sha256 = _fill(spec.sha256, context, f"{where}.sha256", trial).strip().lower().removeprefix("sha256:") \
        if spec.sha256 is not None else None
    if sha256 is not None and (len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256)):
        raise SpecError(f"data.{where}.sha256 (trial {_label(trial)}): {sha256!r} is not 64 hexadecimal digits")
    return Fetch(
        name=_name(spec.name, context, f"{where}.name", trial),
        url=_fill(spec.url, context, f"{where}.url", trial),
        sha256=sha256,
        checksums=_fill(spec.checksums, context, f"{where}.checksums", trial) if spec.checksums else None,
        into=spec.into, unpack=spec.unpack, timeout=spec.timeout, retries=spec.retries,
    )


def _step(spec: PrepareStep, context: dict[str, Any], trial: Trial) -> Step:
    where = f"prepare[{spec.name}]"
    return Step(
        name=_name(spec.name, context, f"{where}.name", trial),
        command=tuple(_fill(arg, context, f"{where}.command[{i}]", trial) for i, arg in enumerate(spec.command)),
        image=_fill(spec.image, context, f"{where}.image", trial) if spec.image else None,
        env=tuple((k, _fill(_text(v), context, f"{where}.env.{k}", trial)) for k, v in spec.env.items()),
        resources=tuple((k, _text(v)) for k, v in spec.resources.items()),
        inputs=tuple(_fill(p, context, f"{where}.inputs", trial) for p in spec.inputs),
        timeout=spec.timeout, retries=spec.retries,
    )


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _label(trial: Trial) -> str:
    return (", ".join(f"{k}={v}" for k, v in trial.params.items()) or "no parameters").replace("\0", "\\0")
