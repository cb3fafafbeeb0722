"""The ``Benchmark`` resource (``kubebench.io/v1alpha1``) and its controller, ``kubebench operator``.

The names of the API are defined here once: the CRD (:mod:`.crd`), the RBAC rules of
``deploy manifests --operator``, the controller and the runner's status writer all take them from
these constants, so that they can never disagree (the original Kubebench's CRD group did not match
its code, and it never installed).
"""

from __future__ import annotations

GROUP = "kubebench.io"
VERSION = "v1alpha1"
KIND = "Benchmark"
PLURAL = "benchmarks"
SINGULAR = "benchmark"
SHORT_NAMES = ("kbench",)
CATEGORIES = ("kubebench",)
API_VERSION = f"{GROUP}/{VERSION}"
CRD_NAME = f"{PLURAL}.{GROUP}"
#: Label on every object the controller makes for a Benchmark (runner Job, spec ConfigMap, CronJob).
BENCHMARK_LABEL = f"{GROUP}/benchmark"
