"""Whose was the run's first failure: the cluster's (a replica preempted, evicted, drained or deleted)
or the workload's (and the operators' cleanup after it)? In the order kubebench saw them, then by
the pods' own times."""

from __future__ import annotations

from typing import Any

from kubebench.backends.kube import status as st
from kubebench.backends.kube.disruptions import Sightings, cause

MAIN = frozenset({"node"})


def pod(name: str, uid: str, code: int | None = None, finished: str = "2026-12-01T10:00:05Z", deleted: str = "",
        target: str = "", reason: str = "") -> dict[str, Any]:
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": name.split("-")[0],
              "batch.kubernetes.io/job-completion-index": name.split("-")[1]}
    meta: dict[str, Any] = {"name": f"kb-x-{name}", "uid": uid, "labels": labels}
    if deleted:
        meta |= {"deletionTimestamp": deleted, "deletionGracePeriodSeconds": 30}
    state = {"running": {}} if code is None else {"terminated": {"exitCode": code, "finishedAt": finished}}
    status: dict[str, Any] = {"containerStatuses": [{"name": "node", "state": state}], "conditions": []}
    if target:
        status["conditions"].append({"type": "DisruptionTarget", "status": "True", "reason": target,
                                     "lastTransitionTime": "2026-12-01T10:00:05Z"})
    if reason:
        status |= {"reason": reason, "phase": "Failed"}
    return {"metadata": meta, "status": status}


def seen(*moments: tuple[float, dict[str, Any]]) -> tuple[list[dict[str, Any]], Sightings]:
    """The pods as last seen, after kubebench saw each state at its moment."""
    sightings, last = Sightings(), {}
    for when, state in moments:
        sightings.observe(state, MAIN, when)
        last[state["metadata"]["uid"]] = state
    return list(last.values()), sightings


def test_a_deleted_node_then_its_peers_broken_rendezvous_is_the_clusters() -> None:
    pods, sightings = seen((1.0, pod("node-1", "b", deleted="2026-12-01T10:00:34Z")),
                           (2.0, pod("node-1", "b", code=143, deleted="2026-12-01T10:00:34Z")),
                           (3.0, pod("node-0", "a", code=1)))
    found = cause(pods, sightings, main=MAIN)
    assert found is not None and found[0] == "node-1 deleted (Terminating)"
    assert st.restarted(pods[0], MAIN) is None  # its SIGTERM's exit code is not the workload's


def test_a_preemption_is_the_clusters_even_after_a_peer_ended_well() -> None:
    pods, sightings = seen((1.0, pod("node-0", "a", code=0)), (2.0, pod("node-1", "b", target="PreemptionByScheduler")))
    assert cause(pods, sightings, main=MAIN)[0] == "node-1 preempted (PreemptionByScheduler)"  # type: ignore[index]


def test_deletions_after_the_workloads_own_end_are_its_operators_cleanup() -> None:
    failed_first = seen((1.0, pod("node-0", "a", code=1)), (2.0, pod("node-1", "b", deleted="2026-12-01T10:00:34Z")))
    assert cause(*failed_first, main=MAIN) is None  # the JobSet deleting the other child Jobs
    done_first = seen((1.0, pod("node-0", "a", code=0)), (2.0, pod("node-1", "b", deleted="2026-12-01T10:00:34Z")))
    assert cause(*done_first, main=MAIN) is None  # cleanPodPolicy: Running after the launcher's success
    evicted_late = seen((1.0, pod("node-0", "a", code=3)), (2.0, pod("node-1", "b", target="EvictionByEvictionAPI")))
    assert cause(*evicted_late, main=MAIN) is None


def test_an_eviction_seen_with_its_own_end_is_the_clusters() -> None:
    evicted = pod("node-1", "b", code=137, target="TerminationByKubelet", reason="Evicted")
    assert cause(*seen((1.0, evicted)), main=MAIN)[0] == "node-1 evicted (TerminationByKubelet)"  # type: ignore[index]


def test_seen_at_one_moment_the_pods_own_times_decide_and_a_tie_is_the_clusters() -> None:
    # deleted at 10:00:04 (deletionTimestamp 10:00:34 less its 30 s of grace)
    before = pod("node-0", "a", code=1, finished="2026-12-01T10:00:03Z")
    same = pod("node-0", "a", code=1, finished="2026-12-01T10:00:04Z")
    deleted = pod("node-1", "b", deleted="2026-12-01T10:00:34Z")
    assert cause(*seen((1.0, before), (1.0, deleted)), main=MAIN) is None
    assert cause(*seen((1.0, same), (1.0, deleted)), main=MAIN)[0] == "node-1 deleted (Terminating)"  # type: ignore[index]
