"""A batch/v1 Job's ``podFailurePolicy`` as the Job controller (Kubernetes 1.31+) applies it to a
failed pod (``pkg/controller/job/pod_failure_policy.go``, ``matchPodFailurePolicy``): the rules are
tried in order and the first that matches decides; ``onExitCodes`` match a container (``containerName``,
or any) that terminated with a non-zero code ``In`` / ``NotIn`` the values; ``onPodConditions``
match a condition of the pod with that type and status (default True). ``FailJob`` fails the Job
with reason ``PodFailurePolicy`` and the message "Container <c> for pod <ns>/<pod> failed with exit
code <n> matching FailJob rule at index <i>"; ``Ignore`` does not count the pod against
``backoffLimit``; ``Count`` (and no rule matching) counts it."""

from __future__ import annotations

from typing import Any


def judge(policy: dict | None, pod: Any, namespace: str) -> tuple[str, str]:
    """``(action, message)`` for a failed pod (a :class:`.kubelet.PodSim`): Count, Ignore or FailJob."""
    for index, rule in enumerate((policy or {}).get("rules") or []):
        codes = rule.get("onExitCodes")
        if codes is not None:
            box = _matching_container(pod, codes)
            if box is not None:
                if rule["action"] == "FailJob":
                    return "FailJob", (f"Container {box.name} for pod {namespace}/{pod.name} failed with exit code "
                                       f"{box.code} matching FailJob rule at index {index}")
                return rule["action"], ""
        elif any(_condition(pod, want) for want in rule.get("onPodConditions") or []):
            return rule["action"], "" if rule["action"] != "FailJob" else \
                f"Pod {namespace}/{pod.name} has condition matching FailJob rule at index {index}"
    return "Count", ""


def _matching_container(pod: Any, codes: dict) -> Any:
    for box in pod.boxes:
        if box.init or box.state != "terminated" or not box.code:
            continue
        if codes.get("containerName") and codes["containerName"] != box.name:
            continue
        if (box.code in codes.get("values", [])) == (codes.get("operator", "In") == "In"):
            return box
    return None


def _condition(pod: Any, want: dict) -> bool:
    return any(c.get("type") == want.get("type") and c.get("status") == want.get("status", "True") for c in pod.conditions)
