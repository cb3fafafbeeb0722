"""Reading a PodGroup (pure, and through a scripted API): whether a run's pods wait for their gang,
what the PodGroup says, its moments for the timeline."""

from __future__ import annotations

from kubebench.backends.kube import podgroup
from kubebench.errors import BackendError

GANG_MESSAGE = "pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable"


def pg(phase: str = "", conditions: list | None = None) -> dict:
    return {"metadata": {"name": "kb-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": phase, "conditions": conditions or []}}


def pod(name: str, node: str = "", message: str = "") -> dict:
    status = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                              "message": message}]} if message else {}
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}, "status": status}


def test_a_gang_waits_until_its_group_is_placed_and_its_pods_bound() -> None:
    assert podgroup.waiting(pg("Pending"), [], 4)  # Volcano: no pod before Inqueue
    assert podgroup.waiting(pg(""), [pod("a", "n1")], 4)
    assert not podgroup.waiting(pg("Inqueue"), [pod("a", "n1"), pod("b")], 2)  # b not tried yet: not the gang's
    assert podgroup.waiting(pg("Inqueue"), [pod("a", "n1"), pod("b", message=GANG_MESSAGE)], 2)
    assert not podgroup.waiting(None, [], 4)
    assert podgroup.held([pod("a", "n1"), pod("b", message=GANG_MESSAGE)]) == f"pod b: {GANG_MESSAGE}"
    assert podgroup.held([pod("c", message="0/3 nodes are available: 3 Insufficient cpu.")]) == ""


def test_what_a_waiting_podgroup_says() -> None:
    unschedulable = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                     "message": "4/4 tasks in gang unschedulable: " + GANG_MESSAGE}
    assert podgroup.why(pg("Pending", [unschedulable])) == f"Pending: 4/4 tasks in gang unschedulable: {GANG_MESSAGE}"
    assert podgroup.why(pg("Inqueue")) == "Inqueue" and podgroup.why(pg()) == "not yet looked at by its scheduler"
    assert "--gang-scheduler-name=scheduler-plugins" in podgroup.missing_warning("scheduler-plugins", "kb-1")


class Api:
    def __init__(self, *answers) -> None:
        self.answers = list(answers)

    def get(self, resource, namespace, name):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_reads_keep_the_last_answer_and_note_the_gangs_moments() -> None:
    gang = podgroup.Gang("volcano", "kb-1")
    assert gang.resource == podgroup.VOLCANO and gang.due(now=1e9)
    assert gang.read(Api(None), "ns", now=10.0) is None and gang.missing and not gang.due(now=10.5)
    scheduled = {"type": "Scheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:07Z"}
    placed = pg("Running", [scheduled])
    assert gang.read(Api(placed), "ns") == placed and not gang.missing
    assert gang.read(Api(BackendError("503")), "ns") == placed  # a failed read keeps what was read
    moments = {b.name: (b.t, b.source, b.precision) for b in gang.boundaries()}
    assert moments == {"gang_created": (1767225600.0, "server", 1.0), "gang_ready": (1767225607.0, "server", 1.0)}
    later = podgroup.Gang("scheduler-plugins", "kb-2")
    later.read(Api(pg("Scheduled")), "ns")
    assert later.boundaries()[1].source == "observed"  # no condition time: when kubebench saw it placed
