"""The informer: one list + watch keeps a cache current through cut streams, expired versions
(410 → list again) and refusals; stopping it ends a watch in progress at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from support.cluster.emulator import ApiError, Emulator, Faults, Store
from support.timing import wait_for

from kubebench.backends.kube.api import Api, Resource
from kubebench.backends.kube.config import KubernetesConfig
from kubebench.backends.kube.informer import Informer

JOBS = Resource("batch", "v1", "jobs", "Job")
KEY = ("batch", "v1", "jobs")
SELECTOR = "kubebench.io/experiment=e1"


def job(name: str, experiment: str = "e1") -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"kubebench.io/experiment": experiment}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}



@pytest.fixture
def informer(emulator: Emulator, tmp_path: Path):
    config = KubernetesConfig(kubeconfig=str(emulator.kubeconfig(tmp_path / "kc", "ns")), api_retries=3)
    api = Api(config)
    changes = []
    informer = Informer(api, JOBS, "ns", SELECTOR, changes.append).start()
    informer.changes = changes
    assert informer.synced.wait(10)
    yield informer
    informer.stop()
    api.close()


def test_the_cache_follows_creates_updates_and_deletes_of_matching_objects(emulator: Emulator, informer: Informer) -> None:
    store = emulator.store
    uid = store.create(KEY, "ns", job("a"))["metadata"]["uid"]
    store.create(KEY, "ns", job("other", experiment="e2"))
    store.update(KEY, "ns", "a", lambda o: {**o, "status": {"succeeded": 1}}, status=True)
    wait_for(lambda: (informer.get("a") or {}).get("status") == {"succeeded": 1})
    assert informer.get("other") is None
    store.delete(KEY, "ns", "a")
    wait_for(lambda: informer.get("a") is None)
    assert informer.deleted("a", uid) and not informer.deleted("a", "another-uid")
    assert informer.changes
    assert emulator.count("GET", watch=False) == 1 and emulator.count("GET", watch=True) == 1


def test_cut_streams_are_watched_again_from_the_last_version(emulator: Emulator, informer: Informer) -> None:
    emulator.faults = Faults(watch_cut=1.0, seed=3)
    emulator.drop_watches()
    for i in range(8):
        emulator.store.create(KEY, "ns", job(f"j{i}"))
        time.sleep(0.1)
    wait_for(lambda: all(informer.get(f"j{i}") for i in range(8)))
    assert emulator.count("GET", watch=True) >= 3  # re-opened after each cut …
    assert emulator.count("GET", watch=False) == 1  # … from the version reached: no list again


def test_an_expired_version_lists_again(emulator: Emulator, tmp_path: Path) -> None:
    emulator.store.events = type(emulator.store.events)(maxlen=5)  # a short history
    config = KubernetesConfig(kubeconfig=str(emulator.kubeconfig(tmp_path / "kc", "ns")), api_retries=1)
    api = Api(config)
    informer = Informer(api, JOBS, "ns", SELECTOR, lambda obj: None).start()
    try:
        assert informer.synced.wait(10)
        emulator.store.create(KEY, "ns", job("gone"))
        wait_for(lambda: informer.get("gone") is not None)
        emulator.refuse[("GET", "jobs")] = ApiError(503, "ServiceUnavailable", "restarting")
        emulator.drop_watches()
        emulator.store.delete(KEY, "ns", "gone")
        for i in range(10):  # more changes than the history keeps
            emulator.store.create(KEY, "ns", job(f"new{i}"))
        del emulator.refuse[("GET", "jobs")]
        wait_for(lambda: informer.get("new9") is not None and informer.get("gone") is None)
        assert emulator.count("GET", watch=False) == 2
    finally:
        informer.stop()
        api.close()


def test_a_watch_request_answered_410_lists_again(emulator: Emulator, informer: Informer) -> None:
    # with --watch-cache=false the server answers the watch request itself 410 once etcd compacted
    # past its resourceVersion: retrying that version forever would freeze the cache
    emulator.store.create(KEY, "ns", job("before"))
    wait_for(lambda: informer.get("before") is not None)
    emulator.refuse[("GET", "jobs")] = ApiError(503, "ServiceUnavailable", "restarting")
    emulator.drop_watches()
    emulator.store.create(KEY, "ns", job("after"))
    emulator.compacted = emulator.store.rv  # etcd compacted past what the informer has seen
    del emulator.refuse[("GET", "jobs")]
    wait_for(lambda: informer.get("after") is not None)
    assert emulator.count("GET", watch=False) == 2  # listed again


def test_a_lasting_refusal_is_reported_a_passing_one_is_not(emulator: Emulator, informer: Informer) -> None:
    emulator.refuse[("GET", "jobs")] = ApiError(503, "ServiceUnavailable", "busy")
    emulator.drop_watches()
    # the informer keeps trying through a 503: refused twice, and still no error reported
    wait_for(lambda: sum(r.code == 503 for r in list(emulator.requests)) >= 2, 10, "two refused requests")
    assert informer.error is None
    emulator.refuse[("GET", "jobs")] = ApiError(403, "Forbidden", 'jobs.batch is forbidden: cannot watch resource "jobs"')
    wait_for(lambda: informer.error is not None)
    assert "HTTP 403 Forbidden" in str(informer.error) and "jobs in ns" in str(informer.error)
    del emulator.refuse[("GET", "jobs")]
    emulator.store.create(KEY, "ns", job("later"))
    wait_for(lambda: informer.get("later") is not None and informer.error is None)


def test_stop_ends_a_watch_in_progress_at_once(emulator: Emulator, informer: Informer) -> None:
    started = time.monotonic()
    informer.stop()
    assert time.monotonic() - started < 2
    assert not any(t.name.startswith("kubebench-watch") and t.is_alive() for t in threading.enumerate()
                   if t is informer._thread)


def test_label_selectors_of_the_emulator() -> None:
    from support.cluster.emulator import matches

    labels = {"a": "1", "b": "x"}
    assert matches("a=1,b==x", labels) and matches("a in (1, 2),!c", labels) and matches("b", labels)
    assert not matches("a!=1", labels) and not matches("a notin (1)", labels) and not matches("c", labels)
    assert Store().list(KEY, "ns", "a=1") == ([], "999")
