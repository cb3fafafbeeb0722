"""kubebench: benchmark machine-learning workloads, from local processes to Kubeflow on Kubernetes.

This module stays import-light: workloads import it to report metrics.
"""

from __future__ import annotations

import math
import re
import sys

__version__ = "0.1.0"

#: Prefix of the metric line protocol read from every replica's log (see README, "Metrics").
METRIC_LINE_PREFIX = "KUBEBENCH_METRIC"
#: What a metric's name may be: in the protocol, in the spec's ``metrics:`` and as a result.json key.
METRIC_NAME = r"[A-Za-z_][A-Za-z0-9_.:/-]*"
_NAME = re.compile(f"^{METRIC_NAME}$")


def report(**metrics: float) -> None:
    """Report metrics of the current run from inside a workload.

    Prints one line of the metric protocol, ``KUBEBENCH_METRIC name=value …``, to stdout; kubebench
    reads it back from the replica's log. When several replicas report the same name, the value of
    the first replica (rank 0) is kept; within one log the last value of a name wins.
    """
    parts = []
    for name, value in metrics.items():
        if not _NAME.match(name):
            raise ValueError(f"invalid metric name {name!r}: use letters, digits, '_', '.', ':', '/', '-'")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"metric {name!r} is not a finite number: {value!r}")
        parts.append(f"{name}={number!r}")
    if parts:
        print(METRIC_LINE_PREFIX, *parts, flush=True, file=sys.stdout)
