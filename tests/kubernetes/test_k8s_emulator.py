"""The API emulator behaves as a real API server where kubebench depends on it (review item 6): the
default ``Warn`` field validation prunes unknown fields, ``Strict`` refuses them; deletion is
asynchronous (Background: dependents later; Foreground: the owner waits; a batch/v1 Job deleted
without a policy orphans its pods; pods on a node stay Terminating until their kubelet is done);
a missing namespace is 404; RBAC answers 403 per verb and resource; labels are validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from support.cluster.emulator import Emulator
from support.cluster.schemas import crds_available
from support.timing import wait_for

PYTORCHJOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
              "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
                  "containers": [{"name": "pytorch", "image": "i"}]}}}}, "notAField": 1}}
JOBS = ("batch", "v1", "jobs")
PODS = ("", "v1", "pods")


@pytest.fixture
def api(emulator: Emulator, tmp_path: Path) -> client.ApiClient:
    emulator.namespace("ns")
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(emulator.kubeconfig(tmp_path / "kc", "ns")), client_configuration=configuration)
    configuration.retries = False
    with client.ApiClient(configuration) as api_client:
        yield api_client



@pytest.mark.skipif(not crds_available(), reason="the CRDs are not there")
def test_unknown_fields_are_pruned_with_a_warning_by_default_and_refused_when_strict(api, emulator: Emulator) -> None:
    custom = client.CustomObjectsApi(api)
    created = custom.create_namespaced_custom_object("kubeflow.org", "v1", "ns", "pytorchjobs", PYTORCHJOB)
    assert "notAField" not in created["spec"]  # Warn (the default since 1.23): pruned, created
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object("kubeflow.org", "v1", "ns", "pytorchjobs",
                                               {**PYTORCHJOB, "metadata": {"name": "k"}}, field_validation="Strict")
    assert refused.value.status == 400
    assert json.loads(refused.value.body)["message"] == ('PyTorchJob in version "v1" cannot be handled as a PyTorchJob: '
                                                         'strict decoding error: unknown field "spec.notAField"')


def config_map(**metadata) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **metadata}}


def test_creating_in_a_namespace_that_does_not_exist_is_404(api) -> None:
    with pytest.raises(ApiException) as missing:
        client.CoreV1Api(api).create_namespaced_config_map("nope", config_map())
    assert missing.value.status == 404 and 'namespaces \\"nope\\" not found' in missing.value.body


def test_labels_are_validated(api) -> None:
    with pytest.raises(ApiException) as invalid:
        client.CoreV1Api(api).create_namespaced_config_map("ns", config_map(labels={
            "kubebench.io/experiment": "Team A/bench #1"}))
    assert invalid.value.status == 422 and "a valid label must be an empty string" in invalid.value.body


def test_rbac_refuses_per_verb_and_answers_access_reviews(api, emulator: Emulator) -> None:
    emulator.allow(("list", "", "pods"))
    core = client.CoreV1Api(api)
    assert core.list_namespaced_pod("ns").items == []
    with pytest.raises(ApiException) as refused:
        core.read_namespaced_pod_log("p", "ns")
    assert refused.value.status == 403 and 'cannot get resource \\"pods/log\\"' in refused.value.body
    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(namespace="ns", verb="list", resource="pods")))
    assert client.AuthorizationV1Api(api).create_self_subject_access_review(review).status.allowed is True


def pod(name: str, owner: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]},
            "metadata": {"name": name, "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": owner["metadata"]["name"],
                                                             "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]}}


def job(name: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}


def test_deletion_is_asynchronous_as_the_garbage_collector_does_it(emulator: Emulator) -> None:
    store = emulator.store
    emulator.namespace("ns")
    background = store.create(JOBS, "ns", job("background"))
    store.create(PODS, "ns", pod("background-0", background))
    store.delete(JOBS, "ns", "background", "Background")
    assert store.find(JOBS, "ns", "background") is None and store.find(PODS, "ns", "background-0") is not None
    wait_for(lambda: store.find(PODS, "ns", "background-0") is None)  # a moment later

    foreground = store.create(JOBS, "ns", job("foreground"))
    store.kubelets.add("node-1")  # its kubelet finishes the pod's deletion
    store.create(PODS, "ns", pod("foreground-0", foreground))
    store.delete(JOBS, "ns", "foreground", "Foreground")
    wait_for(lambda: (store.find(PODS, "ns", "foreground-0") or {}).get("metadata", {}).get("deletionTimestamp"))
    assert store.find(JOBS, "ns", "foreground")["metadata"]["finalizers"] == ["foregroundDeletion"]  # waits
    store.finalize(PODS, "ns", "foreground-0")  # the kubelet has stopped the containers
    wait_for(lambda: store.find(JOBS, "ns", "foreground") is None)

    orphaning = store.create(JOBS, "ns", job("orphaning"))
    store.create(PODS, "ns", pod("orphaning-0", orphaning))
    store.delete(JOBS, "ns", "orphaning")  # batch/v1 Job through REST without a policy: orphan
    wait_for(lambda: store.find(PODS, "ns", "orphaning-0")["metadata"]["ownerReferences"] == [], 10, "the pod orphaned")
