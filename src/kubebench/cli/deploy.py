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
    store_url: Annotated[Optional[str], typer.Option(
        "--store-url", help="An external PostgreSQL (SQLAlchemy URL) instead of a PostgreSQL StatefulSet; it goes in "
                            "the Secret kubebench-store (printed: prefer --store-secret).")] = None,
    store_secret: Annotated[Optional[str], typer.Option(
        "--store-secret", metavar="NAME", help="A Secret of yours whose key `url` is the store's URL (kubectl create "
                                               "secret generic NAME --from-literal=url=…): no store is made.")] = None,
    schedule: Annotated[Optional[str], typer.Option("--schedule", help='A CronJob on this schedule ("0 2 * * *"), each run a new experiment, instead of the runner Job.')] = None,
    label: Annotated[Optional[list[str]], typer.Option(
        "--label", metavar="KEY=VALUE", help="Label every experiment the runner starts (run --label); repeatable.")] = None,
    dashboard: Annotated[bool, typer.Option("--dashboard/--no-dashboard", help="The read-only dashboard (Deployment + Service).")] = True,
    node_access: Annotated[bool, typer.Option("--node-access/--no-node-access", help="A ClusterRole to read nodes (GPU product in the provenance).")] = True,
    operator: Annotated[bool, typer.Option("--operator", help="The Benchmark CRD and its controller (kubebench operator) instead of a runner: each Benchmark resource gets its own.")] = False,
) -> None:
    """Print the Namespace, claim, store, RBAC, spec ConfigMap, runner (Job or CronJob) and dashboard
    (YAML, for `kubectl apply -f -`)."""
    from ..attempts import dump_yaml
    from ..deploy import DEFAULT_IMAGE, Options, check_schedule, manifests as build
    from ..store.series_records import parse_labels

    labels = tuple(parse_labels(label or ()).items())  # a bad label or schedule: exit 2 before any YAML
    schedule = check_schedule(schedule) if schedule is not None else None
    files = _spec_files(spec) if spec is not None else None
    options = Options(namespace, image or DEFAULT_IMAGE, storage_size, storage_class, files,
                      spec.name if spec else "benchmark.yaml", experiment_id, store_url, schedule, labels, dashboard,
                      node_access, store_secret=store_secret, operator=operator)
    docs = build(options)
    if operator:
        from ..operator.manifests import operator_manifests

        docs += operator_manifests(namespace, options.image, dashboard=dashboard)
    sys.stdout.write("---\n".join(_note(doc, spec) + dump_yaml(doc) for doc in docs))


def _spec_files(spec: Path) -> dict[str, str]:
    from ..errors import SpecError
    from ..spec.files import spec_files_of

    try:
        return spec_files_of(spec)
    except OSError as e:
        raise SpecError(f"{spec}: cannot read the spec's folder: {e}") from e


#: What ``kubectl apply`` (client side) can keep of an object: a copy of it in an annotation, and an
#: object's annotations hold at most 256 KiB in all.
CLIENT_APPLY_BYTES = 262_144


def _note(doc: dict, spec: Optional[Path]) -> str:
    """A comment above the spec ConfigMap naming what it ships (and a warning when ``kubectl apply``
    could not keep its copy of it); nothing above other objects."""
    import json

    from ..deploy import SPEC_CONFIGMAP
    from ..spec.files import shipped_size

    if doc["kind"] != "ConfigMap" or doc["metadata"]["name"] != SPEC_CONFIGMAP or spec is None:
        return ""
    names = list(doc["data"])
    shown = ", ".join(names[:20]) + (f", … ({len(names) - 20} more)" if len(names) > 20 else "")
    if len(json.dumps(doc)) > CLIENT_APPLY_BYTES - 4_096:
        sys.stderr.write(f"note: the spec ConfigMap holds {shipped_size(doc['data']):,} bytes: apply it with "
                         "`kubectl apply --server-side` (a plain `kubectl apply` keeps a copy of it in an annotation "
                         f"of at most {CLIENT_APPLY_BYTES:,} bytes, and refuses it)\n")
    count = f"{len(names)} file{'s' if len(names) != 1 else ''}"
    return f"# the spec's folder {spec.parent}: {count}, {shipped_size(doc['data']):,} bytes: {shown}\n"


@deploy_app.command("store-secret")
@expected_errors
def store_secret(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of kubebench's PostgreSQL.")] = "kubebench",
) -> None:
    """Make the Secret kubebench-store of the in-cluster PostgreSQL (a random password and the store's
    URL) unless it is there: what the Job kubebench-store-secret of `deploy manifests` runs."""
    from ..backends.kube.api import SECRETS, Api
    from ..backends.kube.config import KubernetesConfig
    from ..deploy import (
        STORE_PASSWORD_KEY,
        STORE_SECRET,
        STORE_URL_KEY,
        in_cluster_url,
        new_password,
        store_secret as body,
    )

    password = new_password()
    secret = body(namespace, {STORE_PASSWORD_KEY: password, STORE_URL_KEY: in_cluster_url(namespace, password)})
    api = Api(KubernetesConfig(namespace=namespace))
    try:
        made = api.create(SECRETS, namespace, secret) is not None
    finally:
        api.close()
    # never the password: this is a pod's log
    print(f"Secret {namespace}/{STORE_SECRET}: {'made' if made else 'there already, left as it is'}")


@deploy_app.command("crd")
@expected_errors
def crd() -> None:
    """Print the Benchmark CustomResourceDefinition (benchmarks.kubebench.io), generated from the spec model."""
    from ..attempts import dump_yaml
    from ..operator.crd import crd as build

    sys.stdout.write(dump_yaml(build()))
