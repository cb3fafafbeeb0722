"""``data:`` in a spec: the input data of the runs, fetched or made once and cached (kubebench.data).

.. code-block:: yaml

    data:
      datasets:                       # fetched through fsspec: a path, file://, s3://, gs://, https://
        - {name: digits, url: "s3://bucket/digits.tar.gz", sha256: "9f2c…"}
        - {name: "imagenet-{{ size }}", url: "https://…/{{ size }}.tar", checksums: "https://…/SHA256SUMS"}
      prepare:                        # commands that fill $KUBEBENCH_DATA_PATH (= data root / name)
        - {name: "jpegs-{{ images }}", command: [python, make_jpegs.py, --count, "{{ images }}"], timeout: 10m}

Every string may use the trial's parameters (Jinja2, as the job does). Each dataset lands in
``$KUBEBENCH_DATA_ROOT/<name>/`` and is known by a cache key: its URL and checksum, or the prepare
step's rendered definition and the digest of its input files; a key already prepared is reused.
"""

from __future__ import annotations

import re
from typing import Union

from pydantic import Field, field_validator, model_validator

from ..durations import parse_duration
from .base import Model

#: A dataset's name once rendered: a folder name and a label value (the id grammar, kubebench.ids).
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$"
_NAME = re.compile(NAME_PATTERN)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TEMPLATED = ("{{", "{%")


def templated(text: str) -> bool:
    """Whether ``text`` holds a Jinja2 expression (checked once rendered, per trial)."""
    return any(mark in text for mark in _TEMPLATED)


def check_name(name: str) -> str:
    """A dataset name as written: templated, or already of the grammar."""
    if not templated(name) and not _NAME.match(name):
        raise ValueError(f"dataset name {name!r} must be 1 to 63 lowercase letters, digits, '-' and '.', "
                         "starting and ending with a letter or a digit (it names a folder)")
    return name


def _text(value: object) -> object:
    # YAML turns `--count, 200` into an int; a command line is strings
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, (int, float)) else value


class DatasetSpec(Model):
    """``datasets: [{name, url, sha256 | checksums, into}]``: a file fetched, verified, and unpacked
    when it is an archive (tar, tar.gz/bz2/xz, zip)."""

    name: str = Field(min_length=1, max_length=200)
    #: A local path (relative to the spec), ``file://``, ``s3://``, ``gs://``, ``https://`` … (fsspec).
    url: str = Field(min_length=1)
    #: The file's SHA-256 (64 hex digits), or …
    sha256: str | None = None
    #: … a checksums file (``sha256sum`` output: ``<hex>  <file name>``) holding the file's line.
    checksums: str | None = None
    #: A folder under the dataset's where the file lands (or is unpacked); default: the dataset's own.
    into: str = ""
    #: Unpack archives (by their name: .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz, .zip).
    unpack: bool = True
    #: Seconds without progress before the download fails, and further attempts of a failed one
    #: (each resumes where the last stopped).
    timeout: float = 300.0
    retries: int = Field(2, ge=0, le=20)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str | None) -> str | None:
        if value is not None and not templated(value):
            value = value.strip().lower().removeprefix("sha256:")
            if not _SHA256.match(value):
                raise ValueError(f"sha256 {value!r} must be 64 hexadecimal digits")
        return value

    @field_validator("into")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
        if value.startswith("/") or ".." in parts:
            raise ValueError(f"into {value!r} must be a folder inside the dataset's (relative, without '..')")
        return "/".join(parts)

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)

    @model_validator(mode="after")
    def _one_checksum(self) -> "DatasetSpec":
        if (self.sha256 is None) == (self.checksums is None):
            raise ValueError(f"dataset {self.name!r}: give `sha256` or `checksums` (a file of sha256sum lines), "
                             "exactly one: data that cannot be verified is not cached")
        return self


class PrepareStep(Model):
    """``prepare: [{name, command, image, env, inputs, timeout, retries}]``: a command that fills
    ``$KUBEBENCH_DATA_PATH``; locally a process in the spec's folder, on Kubernetes a Job on the
    data volume (``image``: default the job's)."""

    name: str = Field(min_length=1, max_length=200)
    command: list[str] = Field(min_length=1)
    image: str | None = None
    env: dict[str, Union[str, int, float, bool]] = Field(default_factory=dict)
    resources: dict[str, Union[str, int, float]] = Field(default_factory=dict)
    #: Files (relative to the spec; globs allowed) whose contents are part of the cache key: the
    #: generator script, a list of files … A command argument that names a file of the spec's
    #: folder counts as an input without being listed.
    inputs: list[str] = Field(default_factory=list)
    timeout: float = 3600.0
    #: Further attempts of a step that failed (its folder is emptied before each).
    retries: int = Field(0, ge=0, le=20)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, object]) -> dict[str, object]:
        for key in env:
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"environment variable name {key!r} must not be empty or hold '=' or a NUL character")
        return env

    @field_validator("command", mode="before")
    @classmethod
    def _stringify(cls, value: object) -> object:
        return [_text(v) for v in value] if isinstance(value, list) else value

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)


class DataSpec(Model):
    """``data:``: datasets fetched and prepare steps run before the first run, each once per key."""

    datasets: list[DatasetSpec] = Field(default_factory=list)
    prepare: list[PrepareStep] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> "DataSpec":
        names = [d.name for d in self.datasets] + [p.name for p in self.prepare]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"dataset names must be unique: {', '.join(repeated)} given more than once")
        return self

    @property
    def empty(self) -> bool:
        """No dataset and no step: nothing to prepare."""
        return not self.datasets and not self.prepare
