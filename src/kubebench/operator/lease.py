"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` does it:
a candidate takes the Lease when it has no holder or when it has *seen* the record unchanged for a
whole ``leaseDuration`` (its own clock, never the holder's timestamps: clocks drift); the leader
renews every ``retry`` seconds and steps down when it could not renew for ``renew_deadline``; writes
are replaces with the read ``resourceVersion``, so of two candidates only one wins (the other's is
a 409). On a clean stop the leader gives the Lease up (an empty holder) so that another takes over at
once. The official client's own ``leaderelection`` module is not used: it configures the root logger
when imported and drives its callbacks from threads of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ..backends.kube.api import Api
from ..errors import BackendError
from . import kube
from .conditions import timestamp

log = logging.getLogger("kubebench.operator")


class LeaderElector:
    """Holds (or waits for) the Lease ``namespace/name``; ``leading`` is set while it is held."""

    def __init__(self, api: Api, namespace: str, name: str, identity: str, duration: float = 15.0,
                 renew_deadline: float = 10.0, retry: float = 2.0, on_lost: Callable[[], None] | None = None) -> None:
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.duration, self.renew_deadline, self.retry = duration, renew_deadline, retry
        self.on_lost = on_lost or (lambda: None)
        self.leading = threading.Event()
        self.stopped = threading.Event()
        self._observed: tuple[str, float] | None = None  # (record as read, when it changed, monotonic)
        self._renewed = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"kubebench-lease-{identity}")

    def start(self) -> "LeaderElector":
        """Start trying to lead in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop; a leader gives the Lease up."""
        self.stopped.set()
        self._thread.join(timeout=10)
        if self.leading.is_set():
            self.leading.clear()
            self._release()

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                held = self._try()
            except BackendError as e:
                log.warning("leader election: %s", e)
                held = False
            now = time.monotonic()
            if held:
                self._renewed = now
                if not self.leading.is_set():
                    log.info("%s leads (lease %s/%s)", self.identity, self.namespace, self.name)
                    self.leading.set()
            elif self.leading.is_set() and now - self._renewed >= self.renew_deadline:
                log.warning("%s lost the lease %s/%s", self.identity, self.namespace, self.name)
                self.leading.clear()
                self.on_lost()
            self.stopped.wait(self.retry)

    def _try(self) -> bool:
        lease = kube.get(self.api, kube.LEASES, self.namespace, self.name)
        now = time.time()
        record = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.duration),
                  "renewTime": _micro(now)}
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": self.name},
                    "spec": {**record, "acquireTime": _micro(now), "leaseTransitions": 0}}
            return self.api.create(kube.LEASES, self.namespace, body) is not None
        spec = lease.get("spec") or {}
        seen = repr(sorted(spec.items()))
        if self._observed is None or self._observed[0] != seen:
            self._observed = (seen, time.monotonic())
        holder = spec.get("holderIdentity") or ""
        expired = time.monotonic() - self._observed[1] >= float(spec.get("leaseDurationSeconds") or self.duration)
        if holder and holder != self.identity and not expired:
            return False
        if holder != self.identity:
            record.update(acquireTime=_micro(now), leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
        return kube.replace(self.api, kube.LEASES, self.namespace, self.name, {**lease, "spec": {**spec, **record}}) is not None

    def _release(self) -> None:
        try:
            lease = kube.get(self.api, kube.LEASES, self.namespace, self.name)
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                spec = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _micro(time.time())}
                kube.replace(self.api, kube.LEASES, self.namespace, self.name, {**lease, "spec": spec})
        except BackendError as e:
            log.warning("leader election: could not give the lease up: %s", e)


def _micro(now: float) -> str:
    """``metav1.MicroTime``."""
    return timestamp(now).replace("Z", f".{int(now % 1 * 1e6):06d}Z")
