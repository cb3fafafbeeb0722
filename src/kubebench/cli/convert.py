"""``kubebench convert kubebenchjob FILE``: an original Kubebench KubebenchJob as a kubebench spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import app, expected_errors, make_console

convert_app = typer.Typer(help="Convert other tools' benchmark definitions to kubebench specs.", no_args_is_help=True,
                          rich_markup_mode=None)
app.add_typer(convert_app, name="convert")


@convert_app.command("kubebenchjob")
@expected_errors
def kubebenchjob(
    file: Annotated[Path, typer.Argument(help="A KubebenchJob (kubeflow.org/v1alpha1 or v1alpha2), YAML.", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write benchmark.yaml (and its job template) into.")] = Path("."),
    manifest: Annotated[Optional[Path], typer.Option("--manifest", help="v1alpha1: the main job's manifest, rendered from its ksonnet prototype (`ks show`).")] = None,
) -> None:
    """Write the kubebench spec of an original Kubebench KubebenchJob; every field is mapped, noted or refused."""
    from ..attempts import dump_yaml
    from ..errors import SpecError
    from ..spec.convert import convert
    from ..spec.load import parse_yaml, read_text

    doc, _ = parse_yaml(read_text(file, "KubebenchJob"), str(file))
    converted = convert(doc, read_text(manifest, "manifest") if manifest else None)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "benchmark.yaml"
    if target.exists():
        raise SpecError(f"{target}: already there; choose another --out")
    for name, text in converted.files.items():
        (out / name).write_text(text, encoding="utf-8")
    header = "".join(f"# {note}\n" for note in converted.notes)
    target.write_text(f"# Converted from {file.name} by kubebench convert kubebenchjob.\n{header}{dump_yaml(converted.spec)}",
                      encoding="utf-8")
    console = make_console(stderr=True)
    for note in converted.notes:
        console.print(f"note: {note}", soft_wrap=True, markup=False)
    console.print(f"wrote {target}" + "".join(f", {out / n}" for n in converted.files), soft_wrap=True, markup=False)
