"""``kubebench deploy manifests``: the objects that run kubebench itself in a cluster."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import app, expected_errors

deploy_app = typer.Typer(help="Run kubebench itself inside a Kubernetes cluster.", no_args_is_help=True,
                         rich_markup_mode=None)
app.add_typer(deploy_app, name="deploy")


@deploy_app.command("manifests")
@expected_errors
def manifests(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of kubebench and its jobs.")] = "kubebench",
    image: Annotated[Optional[str], typer.Option("--image", help="kubebench's image (built from the Dockerfile).")] = None,
    storage_size: Annotated[str, typer.Option("--storage-size", help="Size of the shared-storage claim.")] = "10Gi",
    storage_class: Annotated[Optional[str], typer.Option("--storage-class", help="StorageClass of the claim (ReadWriteMany).")] = None,
    spec: Annotated[Optional[Path], typer.Option("--spec", help="Benchmark spec to put in the spec ConfigMap.")] = None,
) -> None:
    """Print the PersistentVolumeClaim, ServiceAccount, Role, RoleBinding and the Job running
    `kubebench run` (YAML, for `kubectl apply -f -`)."""
    from ..deploy import DEFAULT_IMAGE, manifests as build, spec_files_of
    from ..errors import SpecError
    from ..runner import dump_yaml

    files = None
    if spec is not None:
        try:
            files = spec_files_of(spec)
        except OSError as e:
            raise SpecError(f"{spec}: cannot read the spec: {e}") from e
    docs = build(namespace, image or DEFAULT_IMAGE, storage_size, storage_class, files,
                 spec.name if spec else "benchmark.yaml")
    sys.stdout.write("---\n".join(dump_yaml(doc) for doc in docs))
