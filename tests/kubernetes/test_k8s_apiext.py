"""What the API emulator serves for a controller, as kube-apiserver does (issue #32): custom resources
from their CRD with the status subresource and ``metadata.generation``, discovery, merge and JSON
patches, Leases with optimistic concurrency, and garbage collection through owner references."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from support.cluster.emulator import Emulator
from support.timing import wait_for

from kubebench.operator import API_VERSION, GROUP, PLURAL, VERSION
from kubebench.operator.crd import crd

CRDS = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
BENCHMARKS = (GROUP, VERSION, PLURAL)
SPEC = {"benchmark": {"name": "b", "job": {"command": ["python", "-c", "pass"]}}}


@pytest.fixture
def api(emulator: Emulator, tmp_path: Path) -> client.ApiClient:
    emulator.namespace("ns")
    emulator.store.create(CRDS, "", crd())
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(emulator.kubeconfig(tmp_path / "kc", "ns")), client_configuration=configuration)
    configuration.retries = False
    with client.ApiClient(configuration) as api_client:
        yield api_client


def benchmark(name: str = "b", **extra) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Benchmark", "metadata": {"name": name}, "spec": SPEC, **extra}


def test_a_crd_is_established_and_its_kind_discovered_with_its_status_subresource(api, emulator: Emulator) -> None:
    established = emulator.store.get(CRDS, "", "benchmarks.kubebench.io")["status"]["conditions"]
    assert {c["type"]: c["status"] for c in established} == {"NamesAccepted": "True", "Established": "True"}
    groups = client.ApisApi(api).get_api_versions()
    (group,) = [g for g in groups.groups if g.name == GROUP]
    assert group.preferred_version.version == VERSION
    kubeflow = next(g for g in groups.groups if g.name == "kubeflow.org")
    assert kubeflow.preferred_version.version == "v1"  # GA before v2beta1
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    listed = {r.name: r for r in client.CustomObjectsApi(api).get_api_resources(GROUP, VERSION).resources}
    assert set(listed) == {"benchmarks", "benchmarks/status"}
    assert listed["benchmarks"].short_names == ["kbench"] and listed["benchmarks"].categories == ["kubebench"]
    assert {"patch", "update", "watch"} <= set(listed["benchmarks"].verbs)
    assert listed["benchmarks/status"].verbs == ["get", "patch", "update"]


def test_status_is_a_subresource_and_generation_counts_spec_changes_only(api) -> None:
    custom = client.CustomObjectsApi(api)
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, benchmark(status={"state": "Failed"}))
    assert "status" not in created and created["metadata"]["generation"] == 1
    with_status = custom.patch_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "b",
                                                               {"status": {"state": "Running"}, "spec": {"suspend": True}})
    assert with_status["status"] == {"state": "Running"} and "suspend" not in with_status["spec"]
    assert with_status["metadata"]["generation"] == 1
    labelled = custom.patch_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "b",
                                                     {"metadata": {"labels": {"a": "b"}}, "status": {"state": "Failed"}})
    assert labelled["metadata"]["generation"] == 1 and labelled["status"] == {"state": "Running"}
    suspended = custom.patch_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "b", {"spec": {"suspend": True}})
    assert suspended["metadata"]["generation"] == 2 and suspended["spec"]["suspend"] is True
    replaced = custom.replace_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "b",
                                                       {**suspended, "metadata": {**suspended["metadata"], "generation": 1}})
    assert replaced["metadata"]["generation"] == 2  # the server owns it
    with pytest.raises(ApiException) as e:  # custom resources take no unconditional update
        custom.replace_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "b", benchmark())
    assert e.value.status == 422 and "resourceVersion" in e.value.body


def test_a_custom_resource_is_checked_against_its_schema_on_every_write(api) -> None:
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as e:
        custom.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, benchmark(spec={"benchmark": {"name": 3}}))
    assert e.value.status == 422 and "spec.benchmark" in e.value.body
    pruned = custom.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, benchmark(spec={**SPEC, "colour": 1}))
    assert "colour" not in pruned["spec"]
    with pytest.raises(ApiException) as e:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "b", {"status": {"state": "Happy"}})
    assert e.value.status == 422


def test_json_patches_apply_with_their_tests_and_strategic_merge_is_refused_for_custom_resources(api) -> None:
    custom = client.CustomObjectsApi(api)
    uid = custom.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, benchmark())["metadata"]["uid"]
    fenced = [{"op": "test", "path": "/metadata/uid", "value": uid}, {"op": "add", "path": "/status", "value": {"progress": "1/2"}}]
    done = custom.patch_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "b", fenced,
                                                        _content_type="application/json-patch+json")
    assert done["status"] == {"progress": "1/2"}
    with pytest.raises(ApiException) as e:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "b",
                                                     [{**fenced[0], "value": "another-uid"}, fenced[1]],
                                                     _content_type="application/json-patch+json")
    assert e.value.status == 422
    with pytest.raises(ApiException) as e:
        custom.patch_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "b", {"spec": {}},
                                              _content_type="application/strategic-merge-patch+json")
    assert e.value.status == 415


def test_leases_are_updated_with_optimistic_concurrency(api) -> None:
    custom = client.CustomObjectsApi(api)
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    lease = custom.create_namespaced_custom_object("coordination.k8s.io", "v1", "ns", "leases", body)
    taken = custom.replace_namespaced_custom_object("coordination.k8s.io", "v1", "ns", "leases", "l",
                                                    {**lease, "spec": {**lease["spec"], "holderIdentity": "b"}})
    assert taken["spec"]["holderIdentity"] == "b"
    with pytest.raises(ApiException) as e:  # a candidate that read the lease before b took it
        custom.replace_namespaced_custom_object("coordination.k8s.io", "v1", "ns", "leases", "l",
                                                {**lease, "spec": {**lease["spec"], "holderIdentity": "c"}})
    assert e.value.status == 409


def test_deleting_a_custom_resource_collects_what_it_owns(api, emulator: Emulator) -> None:
    custom = client.CustomObjectsApi(api)
    owner = custom.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, benchmark())
    ref = {"apiVersion": API_VERSION, "kind": "Benchmark", "name": "b", "uid": owner["metadata"]["uid"],
           "controller": True, "blockOwnerDeletion": True}
    job = emulator.store.create(("batch", "v1", "jobs"), "ns", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "runner", "ownerReferences": [ref]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}})
    emulator.store.create(("", "v1", "pods"), "ns", {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "runner-0", "ownerReferences": [{**ref, "apiVersion": "batch/v1", "kind": "Job", "name": "runner",
                                                  "uid": job["metadata"]["uid"]}]}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    emulator.store.create(("", "v1", "configmaps"), "ns", {"apiVersion": "v1", "kind": "ConfigMap",
                                                          "metadata": {"name": "spec", "ownerReferences": [ref]}})
    custom.delete_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "b")
    wait_for(lambda: not any(k[1] == "ns" and k[0][2] in ("jobs", "pods", "configmaps") for k in emulator.store.objects),
             what="the Benchmark's dependents collected")


def test_the_dashboard_lists_the_benchmarks_of_its_namespace(api, emulator: Emulator, tmp_path: Path, monkeypatch) -> None:
    from fastapi.testclient import TestClient

    from kubebench.store.store import open_store
    from kubebench.web import benchmarks
    from kubebench.web.app import make_app

    monkeypatch.setenv("KUBECONFIG", str(emulator.kubeconfig(tmp_path / "kc2", "ns")))
    benchmarks._cache.clear()
    created = emulator.store.create(BENCHMARKS, "ns", benchmark("shown"))
    emulator.store.update(BENCHMARKS, "ns", "shown", lambda o: {**o, "status": {
        "state": "Running", "progress": "3/12", "experimentId": "shown-1234", "primary": {"metric": "v", "median": "812.5", "unit": "img/s"},
        "gate": {"verdict": "unchanged"}}}, status=True)
    assert created["metadata"]["name"] == "shown"
    with TestClient(make_app(open_store(f"sqlite:///{tmp_path}/s.db")), base_url="http://127.0.0.1") as client:
        answer = client.get("/api/benchmarks").json()
        page = client.get("/").text
    assert answer["available"] and answer["namespace"] == "ns"
    (row,) = answer["items"]
    assert row == {**row, "name": "shown", "state": "Running", "progress": "3/12", "primary": "812.5", "unit": "img/s",
                   "verdict": "unchanged", "link": "/experiments/shown-1234"}
    assert 'id="benchmarks"' in page and "/static/benchmarks.js" in page
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    benchmarks._cache.clear()
    assert benchmarks.listing() == {"available": False, "namespace": None, "reason": "no cluster configured", "items": []}
