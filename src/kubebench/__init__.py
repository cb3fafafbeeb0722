"""kubebench: benchmark machine-learning workloads, from local processes to Kubeflow on Kubernetes.

This module stays import-light: workloads import it to report metrics.
"""

from __future__ import annotations

import math
import re
import sys
import time

__version__ = "0.1.0"

#: Prefix of the metric line protocol read from every replica's log (see README, "Metrics").
METRIC_LINE_PREFIX = "KUBEBENCH_METRIC"
#: What a metric's name may be: in the protocol, in the spec's ``metrics:`` and as a result.json key.
METRIC_NAME = r"[A-Za-z_][A-Za-z0-9_.:/-]*"
_NAME = re.compile(f"^{METRIC_NAME}$")
#: Prefix of the mark line protocol: ``KUBEBENCH_MARK <name> t=<unix seconds>``, a moment of the
#: workload's own timeline (see :func:`mark` and docs/overhead.md).
MARK_LINE_PREFIX = "KUBEBENCH_MARK"
#: The marks kubebench's phases are made of, in the order a workload reaches them: its imports are
#: done, it has joined its peers (``init_process_group`` returned; at once without peers), its first
#: step starts, its last step ends.
MARKS = ("imports_done", "rendezvous_done", "first_step", "last_step")


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
        write_line(" ".join((METRIC_LINE_PREFIX, *parts)))


def mark(name: str, t: float | None = None) -> None:
    """Mark a moment of the current run from inside a workload (``t``: unix seconds, default now).

    Prints ``KUBEBENCH_MARK <name> t=<seconds, 6 decimals>`` to stdout; kubebench reads the marks of
    every replica's log into the run's timeline. The names of :data:`MARKS` become phases
    (``imports_seconds``, ``rendezvous_seconds``, ``init_seconds``, ``train_seconds``); others are
    kept on the timeline. Within one log the last mark of a name wins (as for metrics).
    """
    if not _NAME.match(name):
        raise ValueError(f"invalid mark name {name!r}: use letters, digits, '_', '.', ':', '/', '-'")
    when = time.time() if t is None else float(t)
    if not math.isfinite(when):
        raise ValueError(f"mark {name!r}: the time is not a finite number: {t!r}")
    write_line(f"{MARK_LINE_PREFIX} {name} t={when:.6f}")


def write_line(text: str) -> None:
    """Write ``text`` and its newline to stdout in one write, and flush.

    The processes of a replica share one log, unbuffered (``PYTHONUNBUFFERED``): ``print`` writes its
    parts and its newline one write each, so another rank's line could land inside this one.
    """
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
