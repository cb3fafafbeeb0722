"""Built-in post-processors: ``regex`` on an output file, ``command`` (the original Kubebench's
post-processor container, as a local command) and ``python`` (a ``module:function``).

A post-processor class has a ``Config`` model (its spec options) and ``run(ctx) -> {name: value}``;
it raises ``PostprocessError`` with a clear message when it cannot do its job.
"""

from __future__ import annotations

import importlib
import io
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO, Literal, TextIO, Union

from pydantic import field_validator

from .. import limits
from ..durations import parse_duration
from ..errors import PostprocessError
from ..output_files import open_output_text
from ..redact import job_environment
from ..spec.base import PluginConfig
from .context import RunContext
from .metrics import METRIC_NAME, parse_metric_lines
from .values import to_number

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


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
        values: dict[str, _Selected] = {}
        try:
            with open_output_text(path) as f:
                for match in stream_matches(f, self.pattern):
                    for name, raw in match.groupdict().items():
                        number = to_number(raw)
                        if number is not None:
                            values.setdefault(name, _Selected()).add(number)
        except OSError as e:
            raise PostprocessError(f"cannot read output/{self.config.file}: {e.strerror or e}") from e
        return {name: found.pick(self.config.select) for name, found in values.items()}


def stream_matches(f: TextIO, pattern: re.Pattern) -> Iterator[re.Match]:
    """The matches of ``pattern`` in a text file, read in windows, so that memory does not grow
    with the file: a match up to ``limits.LOG_LINE_CHARS`` long is found as in the whole text; a
    longer one is cut there."""
    overlap = limits.LOG_LINE_CHARS.value()
    chunk, context = 8 * overlap, 4096  # context: what lookbehinds and ^ see before a window
    text, start = "", 0
    while True:
        data = f.read(chunk)
        eof = not data
        text += data
        safe = len(text) if eof else len(text) - overlap  # a match ending past here may still grow
        resume = max(start, safe)
        for match in pattern.finditer(text, start):
            if not eof and match.end() > safe and match.end() - match.start() < overlap:
                resume = match.start()  # seen again, whole, with the next window
                break
            yield match
            resume = max(match.end(), match.start() + 1, safe)
        if eof:
            return
        keep = max(0, resume - context)
        text, start = text[keep:], resume - keep


class _Selected:
    """First, last, min, max and mean of a stream of values, without keeping them."""

    def __init__(self) -> None:
        self.first = self.last = self.total = 0.0
        self.count, self.low, self.high = 0, math.inf, -math.inf

    def add(self, value: float) -> None:
        self.first = value if self.count == 0 else self.first
        self.last, self.total, self.count = value, self.total + value, self.count + 1
        self.low, self.high = min(self.low, value), max(self.high, value)

    def pick(self, how: str) -> float:
        if how == "mean":
            return mean_of(self.total, self.count, self.low, self.high)
        return {"first": self.first, "last": self.last, "min": self.low, "max": self.high}[how]


def mean_of(total: float, count: int, low: float, high: float) -> float:
    """total / count, kept finite when the sum of finite values overflowed (it lies in [low, high])."""
    mean = total / count
    return mean if math.isfinite(mean) else min(max(mean, low), high)


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
        log = ctx.output / "postprocess.log"
        try:
            with open(log, "w+b") as out, tempfile.TemporaryFile() as err:
                # The job's environment, not the runner's: no dashboard token, no store URL.
                done = subprocess.run(argv, cwd=ctx.workdir, env={**job_environment(os.environ), **ctx.env}, stdout=out,
                                      stderr=err, timeout=self.config.timeout, stdin=subprocess.DEVNULL)
                stdout_end = out.tell()
                err.seek(0)
                shutil.copyfileobj(err, out)  # the log: its output, then its errors, as before
        except subprocess.TimeoutExpired as e:
            raise PostprocessError(f"command {argv[0]!r} timed out after {self.config.timeout:g} s") from e
        except OSError as e:
            raise PostprocessError(f"command {argv[0]!r}: {e.strerror or e}") from e
        if done.returncode != 0:
            tail = [line.strip() for line in _tail_lines(log, 3)]
            raise PostprocessError(f"command {shlex.join(argv)} exited {done.returncode}: {' | '.join(tail)}")
        return parse_metric_lines(_lines_before(log, stdout_end))


def _lines_before(path: Path, end: int) -> Iterator[str]:
    """The lines of the first ``end`` bytes of a file (a command's stdout), long lines in pieces."""
    limit = limits.LOG_LINE_CHARS.value()
    with open(path, "rb") as f:
        reader = io.TextIOWrapper(io.BufferedReader(_Limited(f, end)), encoding="utf-8", errors="replace")
        while line := reader.readline(limit):
            yield line


class _Limited(io.RawIOBase):
    """The first ``size`` bytes of a binary file, as a raw stream."""

    def __init__(self, f: BinaryIO, size: int) -> None:
        self.f, self.left = f, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.f.read(min(len(view), self.left))
        view[: len(data)] = data
        self.left -= len(data)
        return len(data)


def _tail_lines(path: Path, count: int, block: int = 64_000) -> list[str]:
    """The last ``count`` non-empty lines of a file, read from its end (each cut to 500 characters)."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - block))
        lines = [line for line in f.read().decode("utf-8", errors="replace").splitlines() if line.strip()]
    return [line[:500] for line in lines[-count:]]


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
        names = [k for k in numbers if not METRIC_NAME.fullmatch(k)]
        if names:
            raise PostprocessError(f"{self.config.function}: {names[0][:100]!r} is not a metric name: use letters, "
                                   "digits, '_', '.', ':', '/', '-', starting with a letter or '_'")
        bad = [k for k, v in numbers.items() if v is None]
        if bad:
            raise PostprocessError(f"{self.config.function}: values of {', '.join(bad)} are not finite numbers")
        return numbers  # type: ignore[return-value]


def _import(module_name: str, folder: str):
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(module_name)
