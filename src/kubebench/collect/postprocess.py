"""Built-in post-processors: ``regex`` on an output file, ``command`` (the original Kubebench's
post-processor container, as a local command) and ``python`` (a ``module:function``).

A post-processor class has a ``Config`` model (its spec options) and ``run(ctx) -> {name: value}``;
it raises ``PostprocessError`` with a clear message when it cannot do its job.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Literal, Union

from pydantic import field_validator

from ..errors import PostprocessError
from ..spec.base import PluginConfig, parse_duration
from .context import RunContext
from .metrics import parse_metric_lines, to_number


class RegexConfig(PluginConfig):
    """``{kind: regex, file: worker-0.log, pattern: '… (?P<metric>[0-9.]+)', select: last}``."""

    kind: Literal["regex"] = "regex"
    file: str
    pattern: str
    select: Literal["first", "last", "mean", "min", "max"] = "last"

    @field_validator("file")
    @classmethod
    def _inside_output(cls, file: str) -> str:
        path = PurePosixPath(file)
        if path.is_absolute() or ".." in path.parts or not file.strip():
            raise ValueError(f"file {file!r} must be a relative path inside the run's output/ folder")
        return file

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"invalid regular expression: {e}") from e
        if not compiled.groupindex:
            raise ValueError("pattern needs named groups, one per metric: (?P<images_per_sec>[0-9.]+)")
        return pattern


class RegexPostprocessor:
    """Metrics from named groups of a regular expression matched against an output file."""

    Config = RegexConfig

    def __init__(self, config: RegexConfig) -> None:
        self.config = config
        self.pattern = re.compile(config.pattern, re.MULTILINE)

    def run(self, ctx: RunContext) -> dict[str, float]:
        """Apply the pattern; ``select`` picks among several matches."""
        path = ctx.output / self.config.file
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise PostprocessError(f"cannot read output/{self.config.file}: {e.strerror or e}") from e
        values: dict[str, list[float]] = {}
        for match in self.pattern.finditer(text):
            for name, raw in match.groupdict().items():
                number = to_number(raw)
                if number is not None:
                    values.setdefault(name, []).append(number)
        return {name: _select(found, self.config.select) for name, found in values.items()}


def _select(values: list[float], how: str) -> float:
    if how == "first":
        return values[0]
    if how == "last":
        return values[-1]
    if how == "mean":
        return sum(values) / len(values)
    return min(values) if how == "min" else max(values)


class CommandConfig(PluginConfig):
    """``{kind: command, command: [python, post.py]}``: run with the job's ``KUBEBENCH_*`` environment."""

    kind: Literal["command"] = "command"
    command: Union[list[str], str]
    timeout: float = 600.0

    @field_validator("command")
    @classmethod
    def _argv(cls, command: Union[list[str], str]) -> list[str]:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("command must not be empty")
        return argv

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)


class CommandPostprocessor:
    """Runs a command like the original post-processor container; it writes ``result/result.json``
    and/or prints ``KUBEBENCH_METRIC`` lines.
    """

    Config = CommandConfig

    def __init__(self, config: CommandConfig) -> None:
        self.config = config

    def run(self, ctx: RunContext) -> dict[str, float]:
        """Run the command in the spec's folder; a non-zero exit fails the run's post-processing."""
        argv = list(self.config.command)
        if argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        try:
            done = subprocess.run(
                argv, cwd=ctx.workdir, env={**os.environ, **ctx.env}, capture_output=True, text=True,
                timeout=self.config.timeout, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise PostprocessError(f"command {argv[0]!r}: {getattr(e, 'strerror', None) or e}") from e
        (ctx.output / "postprocess.log").write_text(done.stdout + done.stderr, encoding="utf-8")
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise PostprocessError(f"command {shlex.join(argv)} exited {done.returncode}: {' | '.join(tail)}")
        return parse_metric_lines(done.stdout.splitlines())


class PythonConfig(PluginConfig):
    """``{kind: python, function: my_module:parse}``, called with the run's ``RunContext``."""

    kind: Literal["python"] = "python"
    function: str

    @field_validator("function")
    @classmethod
    def _reference(cls, function: str) -> str:
        module, sep, name = function.partition(":")
        if not sep or not module or not name.isidentifier():
            raise ValueError(f"function {function!r} must be 'module:function', e.g. 'mypkg.post:parse'")
        return function


class PythonPostprocessor:
    """Calls a Python function; it returns ``{name: number}`` (or writes ``result/result.json``)."""

    Config = PythonConfig

    def __init__(self, config: PythonConfig) -> None:
        self.config = config

    def run(self, ctx: RunContext) -> dict[str, float]:
        """Import (the spec's folder is importable) and call the function."""
        module_name, _, name = self.config.function.partition(":")
        try:
            function = getattr(_import(module_name, str(ctx.workdir)), name)
            result = function(ctx)
        except Exception as e:  # a user's function: any failure is the run's, reported, not raised
            raise PostprocessError(f"{self.config.function}: {type(e).__name__}: {e}") from e
        if result is None:
            return {}
        if not isinstance(result, Mapping):
            raise PostprocessError(f"{self.config.function} returned {type(result).__name__}, expected a mapping")
        numbers = {str(k): to_number(v) for k, v in result.items()}
        bad = [k for k, v in numbers.items() if v is None]
        if bad:
            raise PostprocessError(f"{self.config.function}: values of {', '.join(bad)} are not finite numbers")
        return numbers  # type: ignore[return-value]


def _import(module_name: str, folder: str):
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(module_name)
