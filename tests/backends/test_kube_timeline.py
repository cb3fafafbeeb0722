"""Reading a run's moments from Kubernetes objects (pure): Go durations and the kubelet's Pulled
message, event times to the microsecond or nanosecond, pod fields, and what the watches saw."""

from __future__ import annotations

import pytest

from kubebench.backends.kube.timeline import (
    Clock,
    api_time,
    boundaries,
    event_boundaries,
    event_time,
    go_duration,
    pod_boundaries,
    pull_seconds,
)

T0 = 1767225600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(("text", "seconds"), [("796ms", 0.796), ("1.594s", 1.594), ("1m2.5s", 62.5),
                                                ("1h0m3s", 3603.0), ("0s", 0.0), ("250µs", 0.00025),
                                                ("12ns", 12e-9), ("1.5", None), ("fast", None), ("", None)])
def test_go_durations(text: str, seconds: float | None) -> None:
    found = go_duration(text)
    assert found == (pytest.approx(seconds) if seconds is not None else None)


def test_the_pulled_message_in_each_of_its_forms() -> None:
    new = 'Successfully pulled image "ghcr.io/x:1" in 796ms (1.594s including waiting). Image size: 543804759 bytes.'
    assert pull_seconds(new) == (pytest.approx(0.796), pytest.approx(1.594))
    assert pull_seconds('Container image "busybox" already present on machine') == (0.0, 0.0)
    assert pull_seconds('Successfully pulled image "busybox" in 2.5s') == (2.5, 2.5)  # before "including waiting"
    assert pull_seconds("Pulled something") is None


def test_an_event_says_when_as_finely_as_it_can() -> None:
    ns = int((T0 + 0.123456789) * 1e9)
    assert event_time({"eventTime": "2026-01-01T00:00:00.250000Z"}) == (T0 + 0.25, 1e-6, "eventTime")
    named = {"metadata": {"name": f"pod-a.{ns:x}"}, "lastTimestamp": "2026-01-01T00:00:00Z"}
    t, resolution, where = event_time(named)
    assert (t, resolution, where) == (pytest.approx(T0 + 0.123456789, abs=1e-6), 1e-9, "name")
    aggregated = {"metadata": {"name": f"pod-a.{ns:x}"}, "lastTimestamp": "2026-01-01T00:05:00Z", "count": 3}
    assert event_time(aggregated) == (T0 + 300, 1.0, "lastTimestamp")  # the name is of its first time
    assert event_time({"metadata": {"name": "pod-a.abc"}, "firstTimestamp": "2026-01-01T00:00:01Z"})[2] == "lastTimestamp"
    assert event_time({}) is None and api_time("yesterday") is None and api_time(None) is None


def _event(reason: str, offset: float, container: str = "pytorch", message: str = "", init: bool = False) -> dict:
    path = f"spec.{'initContainers' if init else 'containers'}{{{container}}}"
    return {"reason": reason, "message": message, "metadata": {"name": f"p.{int((T0 + offset) * 1e9):x}"},
            "lastTimestamp": api_text(T0 + offset), "involvedObject": {"kind": "Pod", "fieldPath": path}}


def api_text(t: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_a_pods_events_give_scheduled_pulled_pulling_and_started() -> None:
    events = [{"reason": "Scheduled", "eventTime": "2026-01-01T00:00:01.500000Z", "metadata": {"name": "p.1"}},
              _event("Pulled", 2.0, "init-pytorch", 'Container image "alpine" already present on machine', init=True),
              _event("Pulled", 4.0, message='Successfully pulled image "x" in 1.9s (2.5s including waiting). Image size: 1 bytes.'),
              _event("Pulled", 4.1, "istio-proxy", 'Container image "proxy" already present on machine'),
              _event("Started", 4.6), _event("Started", 4.7, "istio-proxy"), _event("Killing", 9.0)]
    found = {b.name: b for b in event_boundaries(events, "master-0", frozenset({"pytorch"}))}
    assert set(found) == {"scheduled", "pulled", "pulling", "started"}
    assert found["scheduled"].t == T0 + 1.5 and found["scheduled"].precision == 1e-6
    assert found["pulled"].t == pytest.approx(T0 + 4.0, abs=1e-6) and "1.900s pulling, 2.500s with waiting" in found["pulled"].origin
    assert found["pulling"].t == pytest.approx(T0 + 1.5, abs=1e-6)
    assert found["started"].t == pytest.approx(T0 + 4.6, abs=1e-6)  # not the sidecar's


def pod(phase: str = "Succeeded", **extra) -> dict:
    status = {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True",
                                              "lastTransitionTime": "2026-01-01T00:00:01Z"}],
              "containerStatuses": [{"name": "pytorch", "state": {"terminated": {
                  "exitCode": 0, "startedAt": "2026-01-01T00:00:05Z", "finishedAt": "2026-01-01T00:00:09Z"}}}]}
    return {"metadata": {"name": "job-master-0", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"training.kubeflow.org/replica-type": "master",
                                    "training.kubeflow.org/replica-index": "0"}},
            "spec": {"nodeName": "node-1"}, "status": status, **extra}


def test_a_pods_own_fields_are_whole_seconds() -> None:
    found = {b.name: b for b in pod_boundaries(pod(), "master-0", frozenset({"pytorch"}))}
    assert {k: (v.t - T0, v.precision) for k, v in found.items()} == {
        "created": (0, 1.0), "scheduled": (1, 1.0), "started": (5, 1.0), "exited": (9, 1.0)}
    running = pod("Running")
    running["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": "2026-01-01T00:00:05Z"}}
    assert {b.name for b in pod_boundaries(running, "master-0", frozenset())} == {"created", "scheduled", "started"}


def test_the_clock_notes_each_moment_once_and_an_admission_only_after_a_suspension() -> None:
    clock = Clock()
    clock.job({"spec": {"runPolicy": {"suspend": False}}}, now=1.0)
    assert clock.admitted is None  # never held: no queue
    clock.job({"spec": {"runPolicy": {"suspend": True}}}, now=2.0)
    clock.job({"spec": {"runPolicy": {"suspend": False}}}, now=5.0)
    clock.job({"spec": {"runPolicy": {"suspend": False}}}, now=6.0)
    assert clock.admitted == 5.0
    waiting = pod("Pending", spec={})
    waiting["status"] = {"phase": "Pending"}
    clock.pod(waiting, frozenset(), now=10.0)
    clock.pod(pod("Running", spec={"nodeName": "n"}), frozenset(), now=11.0)
    clock.pod(pod(), frozenset(), now=12.0)
    assert clock.pods["u1"] == {"created": 10.0, "scheduled": 11.0, "started": 11.0, "exited": 11.0}
    clock.submitted, clock.deleted = 9.0, 20.0
    found = boundaries(clock, [pod()], lambda uid: [], lambda p: "master-0", frozenset())
    observed = {(b.name, b.replica): b.t for b in found if b.source == "observed"}
    assert observed[("submitted", "")] == 9.0 and observed[("admitted", "")] == 5.0 and observed[("deleted", "")] == 20.0
    assert observed[("created", "master-0")] == 10.0


def test_a_replica_whose_pod_was_created_again_is_its_newest_pod() -> None:
    old, new = pod(), pod()
    new["metadata"] = {**new["metadata"], "uid": "u2", "creationTimestamp": "2026-01-01T00:00:30Z"}
    clock = Clock()
    clock.pod(old, frozenset(), now=1.0)
    asked = []
    found = boundaries(clock, [new, old], lambda uid: asked.append(uid) or [], lambda p: "master-0", frozenset())
    assert asked == ["u2"] and {b.t - T0 for b in found if b.name == "created"} == {30.0}
