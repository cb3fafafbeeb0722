"""``kubebench operator``: the controller of Benchmarks in one namespace.

Three informers (kubebench's own list + watch, :mod:`kubebench.backends.kube.informer`) keep the
Benchmarks, the runner Jobs and the CronJobs the controller made; every change of one of them queues
its Benchmark's name in a work queue (:mod:`.workqueue`), and workers reconcile it: the pure
:func:`.reconcile.decide` on what the caches hold, then its few writes. A failed reconcile comes back
with backoff and never stops the process. With leader election only the Lease's holder reconciles;
the others keep their caches warm and take over when it stops renewing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field

from ..backends.kube.api import CONFIG_MAPS, JOBS, Api
from ..backends.kube.config import KubernetesConfig
from ..backends.kube.informer import Informer
from ..errors import KubebenchError
from . import BENCHMARK_LABEL, KIND, kube
from .children import runner_name
from .lease import LeaderElector
from .reconcile import OWNED, Decision, Observed, decide
from .validate import Verdict, check, resource_spec
from .workqueue import WorkQueue

log = logging.getLogger("kubebench.operator")
LEASE_NAME = "kubebench-operator"


@dataclass
class Options:
    """How the controller runs."""

    namespace: str
    workers: int = 2
    leader_elect: bool = False
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resync: float = 300.0  # every Benchmark is reconciled again this often (timers, lost events)


class Controller:
    """The Benchmark controller; ``start()`` it and ``stop()`` it (SIGTERM does in the command)."""

    def __init__(self, config: KubernetesConfig, options: Options) -> None:
        self.api = Api(config)
        self.options = options
        self.queue = WorkQueue()
        self.reconciles = 0
        self.errors = 0
        ns = options.namespace
        self.benchmarks = Informer(self.api, kube.BENCHMARKS, ns, "", self._changed)
        self.jobs = Informer(self.api, JOBS, ns, BENCHMARK_LABEL, self._changed)
        self.cron_jobs = Informer(self.api, kube.CRON_JOBS, ns, BENCHMARK_LABEL, self._changed)
        self._verdicts: dict[tuple, Verdict] = {}
        self._stopped = threading.Event()
        self._workers: list[threading.Thread] = []
        self.elector = LeaderElector(self.api, ns, LEASE_NAME, options.identity, options.lease_duration,
                                     options.renew_deadline, options.retry_period) if options.leader_elect else None

    def start(self) -> "Controller":
        """Start the informers, the election (if any) and the workers."""
        for informer in (self.benchmarks, self.jobs, self.cron_jobs):
            informer.start()
        if self.elector is not None:
            self.elector.start()
        for i in range(self.options.workers):
            worker = threading.Thread(target=self._work, daemon=True, name=f"kubebench-operator-{i}")
            worker.start()
            self._workers.append(worker)
        threading.Thread(target=self._resync, daemon=True, name="kubebench-operator-resync").start()
        return self

    def stop(self) -> None:
        """Stop working: the queue, the informers, then the Lease (given up)."""
        self._stopped.set()
        self.queue.shut_down()
        for worker in self._workers:
            worker.join(timeout=10)
        for informer in (self.benchmarks, self.jobs, self.cron_jobs):
            informer.stop()
        if self.elector is not None:
            self.elector.stop()
        self.api.close()

    @property
    def leading(self) -> bool:
        """Whether this replica reconciles (it holds the Lease, or there is no election)."""
        return self.elector is None or self.elector.leading.is_set()

    def _changed(self, obj: dict | None) -> None:
        if obj is None:
            for name in self.benchmarks.names():
                self.queue.add(name)
            return
        if obj.get("kind") == KIND:
            self.queue.add(obj["metadata"]["name"])
            return
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("kind") == KIND and ref.get("controller"):
                self.queue.add(ref["name"])

    def _resync(self) -> None:
        while not self._stopped.wait(self.options.resync):
            self._changed(None)

    def _work(self) -> None:
        while (name := self.queue.get()) is not None:
            try:
                if not self.leading:
                    self._wait_to_lead(name)
                    continue
                after = self.reconcile(name)
                self.queue.forget(name)
                if after is not None:
                    self.queue.add_after(name, after)
            except KubebenchError as e:
                self.errors += 1
                log.warning("reconcile %s: %s (again in %.1fs)", name, e, self.queue.retry(name))
            except Exception:  # noqa: BLE001  a bug must not stop the controller: log it, retry with backoff
                self.errors += 1
                log.exception("reconcile %s failed (again in %.1fs)", name, self.queue.retry(name))
            finally:
                self.queue.done(name)

    def _wait_to_lead(self, name: str) -> None:
        """A follower keeps the key until it leads (then every Benchmark is reconciled)."""
        assert self.elector is not None
        self.queue.add_after(name, self.options.retry_period)

    def reconcile(self, name: str) -> float | None:
        """Reconcile the Benchmark ``name``; returns when to look again (None: on its next change)."""
        cr = self.benchmarks.get(name)
        if cr is None or (cr.get("metadata") or {}).get("deletionTimestamp"):
            return None  # deleted: the garbage collector removes what it owned
        self.reconciles += 1
        runner = self._runner(cr)
        gone = runner is None and bool((cr.get("status") or {}).get("runnerJob")) and self._gone(cr)
        decision = decide(Observed(cr, self._verdict(cr), runner, gone, time.time()))
        self._apply(cr, decision)
        return decision.requeue_after

    def _runner(self, cr: dict) -> dict | None:
        informer = self.cron_jobs if (cr.get("spec") or {}).get("schedule") else self.jobs
        found = informer.get(runner_name(cr))
        owners = [r.get("uid") for r in (found or {}).get("metadata", {}).get("ownerReferences") or []]
        return found if found is not None and cr["metadata"]["uid"] in owners else None

    def _gone(self, cr: dict) -> bool:
        """The runner the status names is not in the cache: confirmed by a read (the cache may lag)."""
        res = kube.CRON_JOBS if (cr.get("spec") or {}).get("schedule") else JOBS
        return kube.get(self.api, res, cr["metadata"]["namespace"], runner_name(cr)) is None

    def _verdict(self, cr: dict) -> Verdict:
        spec = resource_spec(cr)
        if isinstance(spec, Verdict):
            return spec
        meta, files, source, version = cr["metadata"], None, "spec.benchmark", ""
        if spec.benchmark_from is not None:
            ref = spec.benchmark_from.config_map_key_ref
            config_map = kube.get(self.api, CONFIG_MAPS, meta["namespace"], ref.name)
            source = f"configmap/{ref.name}/{ref.key}"
            if config_map is None:
                return Verdict(False, "SpecNotFound", f"spec.benchmarkFrom: the ConfigMap {ref.name!r} is not there")
            files, version = dict(config_map.get("data") or {}), config_map["metadata"].get("resourceVersion", "")
        key = (meta["uid"], meta.get("generation"), version)
        if key not in self._verdicts:
            self._verdicts[key] = check(cr, files, source)
        return self._verdicts[key]

    def _apply(self, cr: dict, decision: Decision) -> None:
        for obj in decision.create:
            if kube.create(self.api, obj) is not None:
                log.info("created %s %s for Benchmark %s", obj["kind"], obj["metadata"]["name"], cr["metadata"]["name"])
        if decision.suspend_runner is not None:
            res = kube.CRON_JOBS if (cr.get("spec") or {}).get("schedule") else JOBS
            kube.patch(self.api, res, cr["metadata"]["namespace"], runner_name(cr), {"spec": {"suspend": decision.suspend_runner}})
        status = cr.get("status") or {}
        wanted = {k: decision.status.get(k) for k in OWNED}
        if any(status.get(k) != v for k, v in wanted.items()):
            kube.patch_status(self.api, cr, wanted)
        if decision.delete:
            kube.delete_benchmark(self.api, cr)
