"""Which Kubernetes versions have the fields a job sets (kubebench.render.versions)."""

from __future__ import annotations

import pytest

from kubebench.errors import SpecError
from kubebench.render import versions


def job(**spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "kb-1"},
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "i"}]}}, **spec}}


def pytorch(pod: dict) -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "kb-2"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": pod}}}}}


@pytest.mark.parametrize(("text", "version"), [("1.31", (1, 31)), ("v1.34.2", (1, 34)), ("1.33+", (1, 33)),
                                               ("v1.31.4-gke.1000", (1, 31)), (" 1.37 ", (1, 37))])
def test_versions_are_read_as_major_and_minor(text: str, version: tuple) -> None:
    assert versions.parse(text) == version
    assert versions.show(version) == text.strip().lstrip("v")[:4]


@pytest.mark.parametrize("text", ["", "1", "latest", "one.two", "1.x"])
def test_anything_else_is_a_spec_error_saying_what_a_version_looks_like(text: str) -> None:
    with pytest.raises(SpecError, match="expected MAJOR.MINOR, e.g. 1.31"):
        versions.parse(text)


def test_a_servers_version_comes_from_git_version_else_major_and_minor() -> None:
    assert versions.of_server({"gitVersion": "v1.32.1-eks-1", "major": "1", "minor": "32+"}) == (1, 32)
    assert versions.of_server({"gitVersion": "", "major": "1", "minor": "33+"}) == (1, 33)
    assert versions.of_server({}) is None and versions.of_server(None) is None


def test_each_version_dependent_field_is_found_where_a_job_sets_it() -> None:
    sidecar = {"containers": [{"name": "main", "image": "i"}],
               "initContainers": [{"name": "proxy", "image": "p", "restartPolicy": "Always"}, {"name": "init", "image": "i"}]}
    manifests = [job(managedBy="kueue.x-k8s.io/multikueue", successPolicy={"rules": []}, backoffLimitPerIndex=1,
                     podReplacementPolicy="Failed"),
                 pytorch(sidecar), pytorch({"containers": [{"name": "m", "image": "i"}], "resources": {"limits": {"cpu": "2"}}})]
    found = [(f.gate, where) for f, where in versions.uses(manifests)]
    assert found == [("JobManagedBy", "Job kb-1: spec.managedBy"), ("JobSuccessPolicy", "Job kb-1: spec.successPolicy"),
                     ("JobBackoffLimitPerIndex", "Job kb-1: spec.backoffLimitPerIndex"),
                     ("JobPodReplacementPolicy", "Job kb-1: spec.podReplacementPolicy"),
                     ("SidecarContainers", "PyTorchJob kb-2: pod template 0: initContainers[0].restartPolicy"),
                     ("PodLevelResources", "PyTorchJob kb-2: pod template 0: spec.resources")]
    assert versions.uses([job(), pytorch({"containers": []})]) == []


def test_a_field_is_too_new_only_for_versions_before_the_one_that_has_it() -> None:
    manifests = [job(managedBy="kueue.x-k8s.io/multikueue")]
    (line,) = versions.too_new(manifests, (1, 31))
    assert line == ("Job kb-1: spec.managedBy (Job spec.managedBy) needs Kubernetes 1.32 or later (JobManagedBy); "
                    "Kubernetes 1.31 refuses the field or drops it without a word")
    assert versions.too_new(manifests, (1, 32)) == versions.too_new(manifests, (2, 0)) == []


def test_require_refuses_a_job_the_version_cannot_run_and_checks_nothing_without_one() -> None:
    resources = pytorch({"containers": [{"name": "m", "image": "i"}], "resources": {"limits": {"cpu": "2"}}})
    with pytest.raises(SpecError, match="cannot run as written on this cluster: .*needs Kubernetes 1.34 or later"):
        versions.require([resources], (1, 33))
    versions.require([resources], (1, 34))
    versions.require([resources], None)


def test_reading_a_trainjobs_pod_templates_does_not_change_it() -> None:
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t"},
                "spec": {"trainer": {"image": "i"}}}
    assert versions.uses([trainjob]) == []
    assert "runtimePatches" not in trainjob["spec"]

