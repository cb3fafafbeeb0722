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
    image: Annotated[Optional[str], typer.Option("--image", help="kubebench's image (the Dockerfile's `runner` target).")] = None,
    storage_size: Annotated[str, typer.Option("--storage-size", help="Size of the runs' claim.")] = "10Gi",
    storage_class: Annotated[Optional[str], typer.Option("--storage-class", help="StorageClass of the claim (ReadWriteMany).")] = None,
    spec: Annotated[Optional[Path], typer.Option("--spec", help="Benchmark spec: it and the files beside it go in the spec ConfigMap.")] = None,
    experiment_id: Annotated[Optional[str], typer.Option("--id", help="Experiment the runner Job runs and resumes (default: from the spec).")] = None,
    store_url: Annotated[Optional[str], typer.Option("--store-url", help="An external PostgreSQL (SQLAlchemy URL) instead of a PostgreSQL StatefulSet.")] = None,
    schedule: Annotated[Optional[str], typer.Option("--schedule", help='A CronJob on this schedule ("0 2 * * *"), each run a new experiment, instead of the runner Job.')] = None,
    label: Annotated[Optional[list[str]], typer.Option(
        "--label", metavar="KEY=VALUE", help="Label every experiment the runner starts (run --label); repeatable.")] = None,
    dashboard: Annotated[bool, typer.Option("--dashboard/--no-dashboard", help="The read-only dashboard (Deployment + Service).")] = True,
    node_access: Annotated[bool, typer.Option("--node-access/--no-node-access", help="A ClusterRole to read nodes (GPU product in the provenance).")] = True,
    operator: Annotated[bool, typer.Option("--operator", help="The Benchmark CRD and its controller (kubebench operator) instead of a runner: each Benchmark resource gets its own.")] = False,
) -> None:
    """Print the Namespace, claim, store, RBAC, spec ConfigMap, runner (Job or CronJob) and dashboard
    (YAML, for `kubectl apply -f -`)."""
    from ..deploy import DEFAULT_IMAGE, Options, check_schedule, manifests as build, spec_files_of
    from ..errors import SpecError
    from ..runner import dump_yaml
    from ..store.series_records import parse_labels

    labels = tuple(parse_labels(label or ()).items())  # a bad label or schedule: exit 2 before any YAML
    schedule = check_schedule(schedule) if schedule is not None else None
    files = None
    if spec is not None:
        try:
            files = spec_files_of(spec)
        except OSError as e:
            raise SpecError(f"{spec}: cannot read the spec: {e}") from e
    options = Options(namespace, image or DEFAULT_IMAGE, storage_size, storage_class, files,
                      spec.name if spec else "benchmark.yaml", experiment_id, store_url, schedule, labels, dashboard, node_access)
    docs = build(options)
    if operator:
        from ..operator.manifests import operator_manifests

        runner = {"Job", "CronJob"}
        docs = [d for d in docs if d["kind"] not in runner] + operator_manifests(namespace, options.image)
    sys.stdout.write("---\n".join(dump_yaml(doc) for doc in docs))


@deploy_app.command("crd")
@expected_errors
def crd() -> None:
    """Print the Benchmark CustomResourceDefinition (benchmarks.kubebench.io), generated from the spec model."""
    from ..operator.crd import crd as build
    from ..runner import dump_yaml

    sys.stdout.write(dump_yaml(build()))
