"""``kubebench operator``: the controller of Benchmark resources (``kubebench.io/v1alpha1``)."""

from __future__ import annotations

import signal
import threading
from typing import Annotated, Optional

import typer

from . import app, expected_errors


@app.command()
@expected_errors
def operator(
    namespace: Annotated[Optional[str], typer.Option(
        "--namespace", "-n", envvar="POD_NAMESPACE", help="Namespace of the Benchmarks (default: the pod's, or the kubeconfig's).")] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Benchmarks reconciled at once.")] = 2,
    leader_elect: Annotated[bool, typer.Option("--leader-elect", help="Elect one leader among the replicas (a Lease).")] = False,
    identity: Annotated[Optional[str], typer.Option("--identity", envvar="POD_NAME", help="This replica's name in the Lease.")] = None,
    lease_duration: Annotated[float, typer.Option("--lease-duration", min=2.0, help="Seconds a leader that stopped renewing keeps the Lease.")] = 15.0,
    context: Annotated[Optional[str], typer.Option("--context", help="Kubeconfig context (outside a cluster).")] = None,
) -> None:
    """Run the Benchmark controller until SIGTERM: each Benchmark gets its runner Job, and its status
    its conditions and state."""
    import logging

    from ..backends.kube.api import current_namespace
    from ..backends.kube.config import KubernetesConfig
    from ..operator.controller import Controller, Options

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = KubernetesConfig(namespace=namespace, context=context)
    options = Options(current_namespace(config), workers, leader_elect, lease_duration=lease_duration,
                      renew_deadline=lease_duration * 2 / 3, retry_period=max(0.5, lease_duration / 7.5))
    if identity:
        options.identity = identity
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    controller = Controller(config, options).start()
    try:
        stop.wait()
    finally:
        controller.stop()
