"""The ``kubebench`` command: a thin layer over the Python API, one module per group of commands.

Heavy modules are imported inside the commands so that ``kubebench --help`` answers at once.
Exit codes: 0 ok, 1 failed runs, 2 usage or spec error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from typer.core import TyperGroup


class _Group(TyperGroup):
    """The command list shows each command's whole first sentence, wrapped, never cut with "…"."""

    def format_commands(self, ctx, formatter) -> None:
        rows = [(name, command.get_short_help_str(limit=10_000)) for name in self.list_commands(ctx)
                if (command := self.get_command(ctx, name)) is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    name="kubebench",
    cls=_Group,
    help="Benchmark ML workloads: sweep parameters, run jobs (local processes or Kubeflow), collect and compare metrics.",
    epilog="Start with: kubebench run SPEC.yaml, then kubebench show ID. Each command has -h.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: rendering it with rich costs ~0.2 s of imports
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"kubebench {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Benchmark ML workloads: sweep parameters, run jobs (local processes or Kubeflow), collect and compare metrics."""


SpecArg = Annotated[Path, typer.Argument(metavar="SPEC", help="Benchmark spec (YAML).", show_default=False)]
ParamsOpt = Annotated[Optional[Path], typer.Option("--params", metavar="FILE", help="Parameter file; its entries override the spec's.")]
SetOpt = Annotated[Optional[list[str]], typer.Option(
    "--set", metavar="KEY=VALUE",
    help="Set a parameter the spec has: KEY=VALUE, the value in YAML (a list sweeps). Repeatable.")]
IdOpt = Annotated[Optional[str], typer.Option("--id", metavar="ID", help="Experiment id; an existing id resumes that experiment.")]
StoreOpt = Annotated[Optional[str], typer.Option("--store", metavar="URL", envvar="KUBEBENCH_STORE", help="SQLAlchemy URL of the results store.")]
StorageOpt = Annotated[Optional[str], typer.Option("--storage", metavar="URL", envvar="KUBEBENCH_STORAGE", help="Shared storage of the runs' folders: a folder or a URL (s3://bucket/prefix, gs://…).")]


#: Width of what is written to a file or a pipe: tables whole instead of squeezed into 80 columns.
FILE_WIDTH = 200


def make_console(stderr: bool = False):
    """The console every command prints with, on stdout (stderr): a terminal's width, else ``COLUMNS``,
    else ``FILE_WIDTH``. It is a :class:`~kubebench.present.text.SafeConsole`: no string is read as
    markup, and nothing a terminal acts on is written (names, labels, notes come from users and stores)."""
    import os
    import sys

    from ..present.text import SafeConsole

    stream = sys.stderr if stderr else sys.stdout
    wide = not stream.isatty() and "COLUMNS" not in os.environ
    return SafeConsole(stderr=stderr, highlight=False, width=FILE_WIDTH if wide else None)


def expected_errors(command: Callable) -> Callable:
    """Print an expected error as one message (no traceback) and exit with its code."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from ..errors import KubebenchError

        try:
            return command(*args, **kwargs)
        except KubebenchError as e:
            from ..present.text import cell

            message = cell("error: ", style="bold red")
            message.append(cell(str(e)))  # the message quotes names and values of user or workload origin
            make_console(stderr=True).print(message, soft_wrap=True)
            if getattr(e, "ends_process", False) and _standalone:
                _end_at_once(e.exit_code)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def open_store_of(store: Optional[str]):
    """The results store at ``store`` (``--store``), else the one the settings name."""
    from ..settings import settings
    from ..store.store import open_store

    return open_store(settings(store).store_url)


def load_args(spec: Path, params: Optional[Path], overrides: Optional[list[str]]):
    """The spec loaded with its parameter file and ``--set`` overrides, each of which must name a
    parameter the spec (or the file) has: an unknown key would silently add a swept parameter."""
    from ..spec.load import load_spec

    loaded = load_spec(spec, params_file=params)
    if not overrides:
        return loaded
    check_overrides(loaded.spec, overrides, str(spec) if params is None else f"{spec} (with {params})")
    return load_spec(spec, params_file=params, overrides=tuple(overrides))


#: Spec settings that people try to change with --set, and the option that does change them.
_SETTING_OPTIONS = {"repeats": "--repeats", "parallelism": "--parallelism", "backend": "--backend"}


def check_overrides(spec, overrides: list[str], source: str) -> None:
    """SpecError for ``--set KEY=…`` whose KEY is not a parameter; a warning for an empty value."""
    from ..errors import SpecError
    from ..present.text import cell
    from ..spec.load import parse_override

    names = list(dict.fromkeys([*spec.parameters, *(k for point in spec.include for k in point)]))
    for text in overrides:
        key, _ = parse_override(text)
        if key not in names:
            hint = f"; to change {key}, use {_SETTING_OPTIONS[key]}" if key in _SETTING_OPTIONS else ""
            raise SpecError(f"--set {text!r}: {key!r} is not a parameter of {source}; "
                            f"parameters: {', '.join(names) or 'none'}{hint}")
        if not text.partition("=")[2].strip():
            make_console(stderr=True).print(cell(
                f"warning: --set {text}: empty value; {key} is set to the empty string ''", style="yellow"),
                soft_wrap=True)


#: True in the ``kubebench`` process (``main``), False where tests call ``app`` in their own process.
_standalone = False


def _end_at_once(code: int) -> None:
    """End the process now, without the interpreter's clean-up: an error whose ``ends_process`` is set
    (a SQLite store whose ``-shm`` became read-only) would otherwise crash it while closing the store."""
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    """Entry point of the ``kubebench`` script."""
    global _standalone
    _standalone = True
    app()


# Command modules register themselves on `app`; imported last because they use the names above.
from . import run, results, startup, analysis, history, check, calibrate, efficiency, deploy, pipelines, operator, convert, doctor, data, datasets, export, db, serve  # noqa: E402,F401  # isort: skip  (this order is the order of --help)
