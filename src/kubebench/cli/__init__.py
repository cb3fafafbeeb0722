"""The ``kubebench`` command: a thin layer over the Python API, one module per group of commands.

Heavy modules are imported inside the commands so that ``kubebench --help`` answers at once.
Exit codes: 0 ok, 1 failed runs, 2 usage or spec error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

app = typer.Typer(
    name="kubebench",
    help="Benchmark ML workloads: sweep parameters, run jobs (local processes or Kubeflow), collect and compare metrics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: rendering it with rich costs ~0.2 s of imports
)

SpecArg = Annotated[Path, typer.Argument(help="Benchmark spec (YAML).", show_default=False)]
ParamsOpt = Annotated[Optional[Path], typer.Option("--params", help="Parameter file; its entries override the spec's.")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="Override a parameter: key=value (YAML; a list sweeps).")]
IdOpt = Annotated[Optional[str], typer.Option("--id", help="Experiment id; an existing id resumes that experiment.")]
StoreOpt = Annotated[Optional[str], typer.Option("--store", envvar="KUBEBENCH_STORE", help="SQLAlchemy URL of the results store.")]
StorageOpt = Annotated[Optional[str], typer.Option("--storage", envvar="KUBEBENCH_STORAGE", help="Shared storage of the runs' folders: a folder or a URL (s3://bucket/prefix, gs://…).")]


#: Width of what is written to a file or a pipe: tables whole instead of squeezed into 80 columns.
FILE_WIDTH = 200


def make_console(stderr: bool = False):
    """Rich's console on stdout (stderr): a terminal's width, else ``COLUMNS``, else ``FILE_WIDTH``."""
    import os
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    wide = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, highlight=False, width=FILE_WIDTH if wide else None)


def expected_errors(command: Callable) -> Callable:
    """Print an expected error as one message (no traceback) and exit with its code."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from ..errors import KubebenchError

        try:
            return command(*args, **kwargs)
        except KubebenchError as e:
            make_console(stderr=True).print(f"[bold red]error:[/] {e}", markup=True, soft_wrap=True)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def load_args(spec: Path, params: Optional[Path], overrides: Optional[list[str]]):
    from ..spec.load import load_spec

    return load_spec(spec, params_file=params, overrides=tuple(overrides or ()))


def main() -> None:
    """Entry point of the ``kubebench`` script."""
    app()


# Command modules register themselves on `app`; imported last because they use the names above.
from . import run, results, analysis, efficiency, deploy, data, export, db, serve  # noqa: E402,F401  (this order is the order of --help)
