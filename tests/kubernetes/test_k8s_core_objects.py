"""The API emulator checks core objects as the API server of its Kubernetes version does: the published
schema of that version (types, required fields, enums, unknown fields refused under Strict), the
defaults applied before validation, the fields of feature gates off by default dropped, and the rules
of the Go validation that the schema cannot express (see ``support.cluster.core_rules``)."""

from __future__ import annotations

import copy

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from support.cluster import core_schemas
from support.cluster.emulator import Emulator
from support.cluster.store import ApiError, Store

from kubebench.deploy import manifests

JOBS, CRON_JOBS, PODS = ("batch", "v1", "jobs"), ("batch", "v1", "cronjobs"), ("", "v1", "pods")
DEPLOYMENTS = ("apps", "v1", "deployments")


def store(version: str) -> Store:
    return Store(core_schemas.checkers(lambda: version))


def pod_spec(**extra) -> dict:
    return {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}], **extra}


def job(spec: dict | None = None, pod: dict | None = None) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": pod or pod_spec()}, **(spec or {})}}


IGNORE_DISRUPTIONS = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}


def cron_job(job_spec: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": job_spec}}}


def refused(version: str, key: tuple, doc: dict, validation: str = "Strict") -> ApiError:
    with pytest.raises(ApiError) as caught:
        store(version).create(key, "bench", doc, validation)
    return caught.value


def test_the_runner_job_of_deploy_manifests_is_created_on_1_31_through_the_official_client() -> None:
    emulator = Emulator().start()
    try:
        emulator.namespace("kubebench")
        api = client.ApiClient(client.Configuration(host=emulator.url))
        assert client.VersionApi(api).get_code().git_version == "v1.31.0"
        (runner,) = [d for d in manifests() if d["kind"] == "Job" and d["metadata"]["name"].startswith("kubebench-run-")]
        created = client.BatchV1Api(api).create_namespaced_job("kubebench", runner, field_validation="Strict")
        conditions = created.spec.pod_failure_policy.rules[1].on_pod_conditions
        assert [(c.type, c.status) for c in conditions] == [("DisruptionTarget", "True")]
    finally:
        emulator.stop()


def test_an_unstated_condition_status_is_defaulted_for_a_job_on_every_version_but_the_schema_wants_it_before_1_35() -> None:
    for version in core_schemas.VERSIONS:
        created = store(version).create(JOBS, "bench", job({"podFailurePolicy": IGNORE_DISRUPTIONS}), "Strict")
        assert created["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
            {"type": "DisruptionTarget", "status": "True"}]
        published = core_schemas.published_errors(job({"podFailurePolicy": IGNORE_DISRUPTIONS}), version)
        assert bool(published) == (version < "1.35"), (version, published)


@pytest.mark.parametrize(("version", "accepted"), [("1.31", False), ("1.33", False), ("1.34", True), ("1.37", True)])
def test_a_cron_jobs_unstated_condition_status_is_refused_before_1_34(version: str, accepted: bool) -> None:
    doc = cron_job({"podFailurePolicy": IGNORE_DISRUPTIONS, "template": {"spec": pod_spec()}})
    if accepted:
        created = store(version).create(CRON_JOBS, "bench", doc, "Strict")
        template = created["spec"]["jobTemplate"]["spec"]
        assert template["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"
    else:
        error = refused(version, CRON_JOBS, doc)
        assert error.code == 422
        assert "spec.jobTemplate.spec.podFailurePolicy.rules[0].onPodConditions[0].status: Required value" in error.message


def test_managed_by_is_dropped_without_a_word_before_1_32() -> None:
    doc = job({"managedBy": "kueue.x-k8s.io/multikueue"})
    assert "managedBy" not in store("1.31").create(JOBS, "bench", copy.deepcopy(doc), "Strict")["spec"]
    assert store("1.32").create(JOBS, "bench", doc, "Strict")["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"


def test_pod_level_resources_are_unknown_on_1_31_dropped_until_1_34_and_kept_from_then() -> None:
    resources = {"requests": {"cpu": "1"}}
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(resources=resources)}
    error = refused("1.31", PODS, copy.deepcopy(doc))
    assert error.code == 400 and 'unknown field "spec.resources"' in error.message
    assert "resources" not in store("1.33").create(PODS, "bench", copy.deepcopy(doc), "Strict")["spec"]
    assert store("1.34").create(PODS, "bench", doc, "Strict")["spec"]["resources"] == resources


@pytest.mark.parametrize(("doc", "message"), [
    (job(pod=pod_spec(restartPolicy="Sometimes")), "spec.template.spec.restartPolicy: 'Sometimes' is not one of"),
    (job(pod=pod_spec(restartPolicy="Always")), "spec.template.spec.restartPolicy: Required value"),
    (job({"podFailurePolicy": IGNORE_DISRUPTIONS}, pod_spec(restartPolicy="OnFailure")),
     'only "Never" is supported when podFailurePolicy is specified'),
    (job({"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {
        "containerName": "other", "operator": "In", "values": [2, 1, 0]}}]}}),
     'containerName: Invalid value: "other"'),
    (job({"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2, 1]}}]}}),
     "values: Invalid value: [2, 1]: must be ordered"),
    (job({"podFailurePolicy": {"rules": [{"action": "Stop", "onExitCodes": {"operator": "In", "values": [1]}}]}}),
     "action: 'Stop' is not one of"),
    (job({"completionMode": "Indexed"}), "spec.completions: Required value: when completion mode is Indexed"),
    (job({"successPolicy": {"rules": [{"succeededCount": 1}]}}), "spec.successPolicy: Invalid value: requires indexed"),
    (job(pod=pod_spec(containers=[{"name": "main", "image": "i", "volumeMounts": [{"name": "gone", "mountPath": "/x"}]}])),
     'spec.template.spec.containers[0].volumeMounts[0].name: Not found: "gone"'),
    (job(pod=pod_spec(containers=[{"name": "main", "image": "i"}, {"name": "main", "image": "j"}])),
     'containers[1].name: Duplicate value: "main"'),
    (job(pod=pod_spec(initContainers=[{"name": "side", "image": "i", "restartPolicy": "Never"}])),
     'initContainers[0].restartPolicy: Unsupported value: "Never"'),
    ({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
      "spec": {"accessModes": ["ReadWriteSome"], "resources": {"requests": {"storage": "1Gi"}}}},
     "spec.accessModes.0: 'ReadWriteSome' is not one of"),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"selector": {"matchLabels": {"app": "a"}},
               "template": {"metadata": {"labels": {"app": "b"}}, "spec": pod_spec(restartPolicy="Always")}}},
     "`selector` does not match template `labels`"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}, "data": {"a": 1}},
     "data.a: 1 is not of type 'string', 'null'"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_what_the_api_server_refuses_is_a_422_saying_where(doc: dict, message: str) -> None:
    plural = {"Job": JOBS, "Deployment": DEPLOYMENTS, "PersistentVolumeClaim": ("", "v1", "persistentvolumeclaims"),
              "ConfigMap": ("", "v1", "configmaps")}[doc["kind"]]
    error = refused(core_schemas.OLDEST, plural, doc)
    assert error.code == 422
    assert message in " ".join(c["message"] for c in error.details["causes"]), error.details["causes"]


def test_an_unknown_field_of_a_core_object_is_pruned_with_a_warning_or_refused_when_strict() -> None:
    doc = job(pod=pod_spec(containers=[{"name": "main", "image": "i", "comand": ["x"]}]))
    error = refused(core_schemas.OLDEST, JOBS, copy.deepcopy(doc))
    assert error.code == 400 and 'unknown field "spec.template.spec.containers.0.comand"' in error.message
    warnings: list[str] = []
    from support.cluster.schemas import prune

    created = Store(core_schemas.checkers(lambda: "1.31"), prune=prune).create(JOBS, "bench", doc, "Warn", warnings)
    assert "comand" not in created["spec"]["template"]["spec"]["containers"][0]
    assert warnings == ['unknown field "spec.template.spec.containers.0.comand"']


def test_the_emulator_says_its_version_and_checks_by_it() -> None:
    emulator = Emulator(kubernetes_version="1.37").start()
    try:
        api = client.ApiClient(client.Configuration(host=emulator.url))
        info = client.VersionApi(api).get_code()
        assert (info.major, info.minor, info.git_version) == ("1", "37", "v1.37.0")
        emulator.namespace("bench")
        resources = {"requests": {"cpu": "1"}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(resources=resources)}
        assert client.CoreV1Api(api).create_namespaced_pod("bench", pod, field_validation="Strict").spec.resources.requests \
            == {"cpu": "1"}
        emulator.kubernetes_version = "1.31"
        with pytest.raises(ApiException) as caught:
            client.CoreV1Api(api).create_namespaced_pod("bench", {**pod, "metadata": {"name": "q"}}, field_validation="Strict")
        assert caught.value.status == 400
    finally:
        emulator.stop()
