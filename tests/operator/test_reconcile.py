"""The controller's pure parts: the decision of one reconcile, conditions, and the work queue."""

from __future__ import annotations

import calendar
import threading
import time

import pytest

from kubebench.operator.conditions import Want, merged
from kubebench.operator.reconcile import Observed, decide
from kubebench.operator.validate import Verdict, check
from kubebench.operator.workqueue import WorkQueue

BODY = {"name": "b", "job": {"kind": "Job", "command": ["python", "-c", "pass"]}, "repeats": 3,
        "parameters": {"bs": [1, 2]}}


def cr(**spec) -> dict:
    return {"apiVersion": "kubebench.io/v1alpha1", "kind": "Benchmark",
            "metadata": {"name": "b", "namespace": "ns", "uid": "0123456789ab", "generation": 1},
            "spec": {"benchmark": BODY, **spec}}


def job(condition: str | None = None, message: str = "", **status) -> dict:
    conditions = [{"type": condition, "status": "True", "reason": "PodFailurePolicy", "message": message}] if condition else []
    return {"kind": "Job", "metadata": {"name": "kb-runner-b-01234"}, "spec": {"suspend": False},
            "status": {"conditions": conditions, "startTime": "2026-12-02T00:00:00Z", **status}}


def reasons(decision) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in decision.status["conditions"]}


def test_a_valid_spec_is_planned_and_makes_its_configmap_and_runner_job() -> None:
    verdict = check(cr(), None, "spec.benchmark")
    assert verdict.ok and verdict.message == "2 trials, 6 runs" and verdict.planned == 6
    decision = decide(Observed(cr(), verdict, now=0))
    assert [o["kind"] for o in decision.create] == ["ConfigMap", "Job"]
    assert decision.status["state"] == "Pending" and reasons(decision)["Accepted"] == ("True", "SpecValid")
    args = decision.create[1]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--benchmark-ref" in args and args[args.index("--id") + 1] == "b-01234567"
    again = decide(Observed({**cr(), "status": decision.status}, verdict, job(), now=1))
    assert again.create == () and again.status["state"] == "Running"  # idempotent: nothing made twice


@pytest.mark.parametrize(("message", "reason"), [
    ("Container kubebench for pod ns/p failed with exit code 1 matching FailJob rule at index 0", "RunsFailed"),
    ("Container kubebench for pod ns/p failed with exit code 2 matching FailJob rule at index 0", "InvalidSpec"),
    ("Job has reached the specified backoff limit", "RunnerFailed"),
])
def test_the_runners_exit_code_names_the_failure(message: str, reason: str) -> None:
    verdict = check(cr(), None, "spec.benchmark")
    seen = {**cr(), "status": {"runnerJob": "kb-runner-b-01234", "runs": {"planned": 6, "failed": 2}}}
    decision = decide(Observed(seen, verdict, job("Failed", message), now=0))
    assert reasons(decision)["Failed"] == ("True", reason) and decision.status["state"] == "Failed"
    assert decision.suspend_runner is None and "completionTime" in decision.status


def test_a_deleted_runner_is_a_terminal_failure_and_is_not_made_again() -> None:
    seen = {**cr(), "status": {"runnerJob": "kb-runner-b-01234"}}
    decision = decide(Observed(seen, check(cr(), None, "spec.benchmark"), None, runner_gone=True, now=0))
    assert decision.create == () and reasons(decision)["Failed"] == ("True", "RunnerDeleted")


def test_suspension_is_mirrored_on_the_runner_job_until_it_ends() -> None:
    verdict = check(cr(suspend=True), None, "spec.benchmark")
    decision = decide(Observed(cr(suspend=True), verdict, job(), now=0))
    assert decision.suspend_runner is True and decision.status["state"] == "Suspended"
    done = decide(Observed(cr(suspend=True), verdict, job("Complete"), now=0))
    assert done.suspend_runner is None and done.status["state"] == "Succeeded"


def test_the_time_to_live_counts_from_completion() -> None:
    verdict = check(cr(ttlSecondsAfterFinished=60), None, "spec.benchmark")
    seen = {**cr(ttlSecondsAfterFinished=60), "status": {"runnerJob": "x", "completionTime": "2026-12-02T00:00:00Z"}}
    t0 = calendar.timegm((2026, 12, 2, 0, 0, 0))
    early = decide(Observed(seen, verdict, job("Complete"), now=t0 + 10))
    assert not early.delete and early.requeue_after == pytest.approx(50)
    assert decide(Observed(seen, verdict, job("Complete"), now=t0 + 61)).delete


def test_a_gate_verdict_sets_regressed() -> None:
    verdict = check(cr(), None, "spec.benchmark")
    seen = {**cr(), "status": {"runnerJob": "x", "gate": {"verdict": "regressed", "detail": "FAIL: 1 regression"}}}
    assert reasons(decide(Observed(seen, verdict, job("Complete"), now=0)))["Regressed"] == ("True", "SignificantRegression")


def test_a_missing_configmap_is_looked_at_again_and_is_not_terminal() -> None:
    missing = Verdict(False, "SpecNotFound", "spec.benchmarkFrom: the ConfigMap 'x' is not there")
    decision = decide(Observed(cr(), missing, now=0))
    assert decision.requeue_after == 10.0 and decision.status["state"] == "Pending" and decision.create == ()


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    first = merged([], {"Accepted": Want("True", "SpecValid")}, 1, now=0)
    later = merged(first, {"Accepted": Want("True", "SpecValid", "new message")}, 2, now=100)
    flipped = merged(later, {"Accepted": Want("False", "InvalidSpec")}, 3, now=200)
    assert later[0]["lastTransitionTime"] == first[0]["lastTransitionTime"] != flipped[0]["lastTransitionTime"]
    assert later[0]["observedGeneration"] == 2


def test_the_work_queue_holds_a_key_once_and_hands_it_to_one_worker() -> None:
    queue = WorkQueue()
    for _ in range(3):
        queue.add("a")
    queue.add("b")
    assert queue.get() == "a"
    queue.add("a")  # in flight: queued again once done, not handed to a second worker
    assert queue.get() == "b"
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get()))
    worker.start()
    time.sleep(0.05)
    assert got == []
    queue.done("a")
    worker.join(timeout=5)
    assert got == ["a"]


def test_a_failing_key_backs_off_exponentially_until_it_succeeds() -> None:
    queue = WorkQueue()
    assert [queue.retry("k") for _ in range(4)] == pytest.approx([0.05, 0.1, 0.2, 0.4])
    queue.forget("k")
    assert queue.retry("k") == pytest.approx(0.05)
    queue.shut_down()
    assert queue.get() is None


def test_a_schedule_is_a_cronjob_of_runners_each_a_new_experiment() -> None:
    schedule = {"cron": "0 2 * * *", "concurrencyPolicy": "Replace", "successfulHistoryLimit": 5, "timeZone": "Etc/UTC"}
    verdict = check(cr(schedule=schedule), None, "spec.benchmark")
    decision = decide(Observed(cr(schedule=schedule), verdict, now=0))
    (config_map, cron) = decision.create
    assert cron["kind"] == "CronJob" and len(cron["metadata"]["name"]) <= 52
    spec = cron["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"], spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"],
            spec["timeZone"]) == ("0 2 * * *", "Replace", 5, 3, "Etc/UTC")
    command = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--id" not in command and "--benchmark-ref" in command
    running = {**cron, "status": {"lastScheduleTime": "2026-12-02T02:00:00Z"}}
    later = decide(Observed({**cr(schedule=schedule), "status": decision.status}, verdict, running, now=1))
    assert later.status["state"] == "Scheduled" and later.status["lastScheduleTime"] == "2026-12-02T02:00:00Z"
    assert later.create == ()
