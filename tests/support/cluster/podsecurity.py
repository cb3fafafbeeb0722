"""The PodSecurity ``restricted`` profile (Kubernetes Pod Security Standards, latest), as the API
server's ``pod-security-admission`` checks a pod spec: ``staging/src/k8s.io/pod-security-admission/policy``;
the store refuses a pod that breaks it in a namespace labelled to enforce it (:func:`refusal`)."""

from __future__ import annotations

from typing import Any

ALLOWED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}


def violations(spec: dict[str, Any]) -> list[str]:
    """What keeps a pod spec out of a ``restricted`` namespace (empty when it is compliant)."""
    found = [f"host namespace {key}" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    found += [f"volume {v['name']} is not an allowed type" for v in spec.get("volumes") or []
              if not set(v) - {"name"} <= ALLOWED_VOLUMES]
    pod = spec.get("securityContext") or {}
    if pod.get("runAsUser") == 0:
        found.append("pod runAsUser 0")
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        found += [f"{container['name']}: {v}" for v in _container(container.get("securityContext") or {}, pod)]
        found += [f"{container['name']}: hostPort" for p in container.get("ports") or [] if p.get("hostPort")]
    return found


def _container(ctx: dict[str, Any], pod: dict[str, Any]) -> list[str]:
    found = []
    if ctx.get("privileged"):
        found.append("privileged")
    if ctx.get("allowPrivilegeEscalation") is not False:
        found.append("allowPrivilegeEscalation != false")
    capabilities = ctx.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []):
        found.append("capabilities must drop ALL")
    if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
        found.append("capabilities may add only NET_BIND_SERVICE")
    if not ctx.get("runAsNonRoot", pod.get("runAsNonRoot")):
        found.append("runAsNonRoot != true")
    if ctx.get("runAsUser") == 0:
        found.append("runAsUser 0")
    profile = (ctx.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
    if profile not in ("RuntimeDefault", "Localhost"):
        found.append("seccompProfile must be RuntimeDefault or Localhost")
    return found


#: The namespace label the API server's PodSecurity admission enforces (``pod-security.kubernetes.io/enforce``).
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"


def refusal(namespace_labels: dict[str, str], name: str, spec: dict[str, Any]) -> str | None:
    """The API server's message refusing the pod ``name`` in a namespace enforcing ``restricted``
    (``pods "<name>" is forbidden: violates PodSecurity "restricted:latest": …``); None when it is let in
    (another level, or no violation). Only ``restricted`` is checked: ``baseline`` is not emulated."""
    if namespace_labels.get(ENFORCE_LABEL) != "restricted":
        return None
    found = violations(spec)
    if not found:
        return None
    return f'pods "{name}" is forbidden: violates PodSecurity "restricted:latest": {", ".join(found)}'
