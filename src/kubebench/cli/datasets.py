"""``kubebench data ls`` and ``data rm``: the datasets kept in a data root (see kubebench.data)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, make_console

data_app = typer.Typer(help="Datasets kept in the data root: what is cached, and removing it.", no_args_is_help=True)
app.add_typer(data_app, name="data")

RootOpt = Annotated[Optional[Path], typer.Option(
    "--root", metavar="DIR", help="The data root (default: the spec's data_root with --spec, else $KUBEBENCH_HOME/data).")]
SpecOpt = Annotated[Optional[Path], typer.Option("--spec", metavar="SPEC", help="Use this spec's data root.")]


class Format(str, Enum):
    table = "table"
    json = "json"


def _cache(root: Optional[Path], spec: Optional[Path]):
    from ..data.cache import DataCache
    from ..settings import settings

    if root is not None:
        return DataCache(root.resolve())
    if spec is not None:
        from ..spec.load import load_spec

        loaded = load_spec(spec)
        if loaded.spec.data_root:
            return DataCache((loaded.base_dir / loaded.spec.data_root).resolve())
    return DataCache(settings().data_root)


@data_app.command("ls")
@expected_errors
def ls(
    root: RootOpt = None,
    spec: SpecOpt = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="table or json.")] = Format.table,
    store: StoreOpt = None,
) -> None:
    """List the datasets of the data root: state, size, key, checksum, and the experiments that read them."""
    from ..data.listing import list_datasets, partial_downloads
    from ..settings import settings
    from ..store.store import open_store

    cache = _cache(root, spec)
    found = list_datasets(cache, open_store(settings(store).store_url))
    if format is Format.json:
        sys.stdout.write(json.dumps([e.to_dict() for e in found], indent=2) + "\n")
        return
    from ..present.data import datasets_table
    from ..present.text import cell

    console = make_console()
    if not found:
        console.print(cell(f"no datasets in {cache.root}"))
    else:
        console.print(datasets_table(found, str(cache.root)))
    count, size = partial_downloads(cache)
    if count:
        from ..present.numbers import si

        console.print(cell(f"{count} unfinished download{'s' if count > 1 else ''} ({si(size, 'bytes')}) in "
                           f"{cache.meta / 'partial'}: the next fetch of their dataset resumes them"))


@data_app.command("rm")
@expected_errors
def rm(
    names: Annotated[list[str], typer.Argument(help="Datasets to remove.", show_default=False)],
    root: RootOpt = None,
    spec: SpecOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove datasets from the data root (refused while one is being prepared); the next experiment
    that needs one prepares it again. What the store recorded of the experiments stays."""
    from ..errors import NotFoundError
    from ..present.text import cell

    cache = _cache(root, spec)
    known = set(cache.names())
    missing = [n for n in names if n not in known]
    if missing:
        raise NotFoundError(f"no dataset {', '.join(map(repr, missing))} in {cache.root} (see `kubebench data ls`)")
    if not yes:
        typer.confirm(f"Remove {', '.join(names)} from {cache.root}?", abort=True)
    console = make_console()
    for name in names:
        cache.remove(name)
        console.print(cell(f"removed dataset {name} ({cache.folder(name)})"))
