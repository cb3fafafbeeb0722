"""One definition of each rule that several parts of kubebench apply (ARCHITECTURE, convention 12).

The CLI, the web API and the HTML report import these, so that the same two experiments get the same
verdict everywhere, the same metric is "the primary one", and replicas are listed in the same order.
Pure and import-free, so that every layer (render, collect, analyse, present, web) may use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

#: Relative change below which a difference is noise: ``compare`` calls two experiments ``unchanged``
#: only when the ratio's whole CI lies within 1 ± this (see :mod:`kubebench.analyse.compare`).
COMPARE_THRESHOLD = 0.02
#: Significance level of the one-sided tests behind ``improved`` / ``regressed``.
COMPARE_ALPHA = 0.05
#: The chance of finding a change at least as large as the one a "minimum detectable change" names: what
#: ``run`` warns with before a benchmark, and what an inconclusive verdict says these runs could have seen.
GATE_POWER = 0.9

#: Whether larger or smaller values of a metric are better.
Goal = Literal["maximize", "minimize"]
GOALS: tuple[Goal, ...] = ("maximize", "minimize")
#: What a comparison of a candidate with its base says, whichever test made it (a pair, a sequence of rounds).
Verdict = Literal["improved", "regressed", "unchanged", "inconclusive"]
#: The goal of a metric that declares none (throughputs are the common case).
DEFAULT_GOAL: Goal = "maximize"
#: Energy and money spent (kubebench's energy and cost metrics): less is better unless declared otherwise.
MINIMIZED_METRIC = re.compile(r"^(?:energy_joules(?:_measured)?|.*_energy_joules|joules_per_.+|cost_usd|usd_per_.+)$")

#: Replica types in rank order: the one holding rank 0 (master, chief, launcher) first. Lower case;
#: Kubeflow's capitalised replica types (``Master``, ``Worker``) are ranked by their lower-case name.
REPLICA_ORDER = ("master", "chief", "launcher", "worker", "node", "ps", "evaluator")

#: The (Cluster)TrainingRuntime a TrainJob runs on unless the spec's ``job.runtime`` names another.
DEFAULT_RUNTIME = "torch-distributed"

#: ``job.processes_per_replica`` by default: one process per GPU a replica requests, else one.
AUTO_PROCESSES = "auto"

#: Parameter names that hold a number of workers: what scaling studies sweep.
WORKER_PARAMETER = re.compile(r"^(n_?|num_?)?(workers?|replicas?|nodes?|gpus?|processes|procs|world_size|ranks?|np)$",
                              re.IGNORECASE)


def replica_rank(replica_type: str) -> int:
    """Position of a replica type in :data:`REPLICA_ORDER`; unknown types come last."""
    name = replica_type.lower()
    return REPLICA_ORDER.index(name) if name in REPLICA_ORDER else len(REPLICA_ORDER)


def primary_metric(declared: Sequence[Mapping[str, object]]) -> str | None:
    """The declared metric marked ``primary``, else the first declared one, else None."""
    chosen = next((m for m in declared if m.get("primary")), declared[0] if declared else None)
    return str(chosen["name"]) if chosen else None


def default_goal(name: str) -> Goal:
    """The goal of a metric that declares none: ``minimize`` for energy and cost, else :data:`DEFAULT_GOAL`."""
    return "minimize" if MINIMIZED_METRIC.match(name) else DEFAULT_GOAL


def metric_goal(declared: Sequence[Mapping[str, object]], name: str) -> Goal:
    """The goal declared for ``name``, else its :func:`default_goal`."""
    goal = next((m.get("goal") for m in declared if m.get("name") == name), None)
    return next((g for g in GOALS if g == goal), default_goal(name))


def worker_parameters(names: Sequence[str]) -> list[str]:
    """The names among ``names`` that hold a number of workers (``workers``, ``nodes``, ``gpus`` …)."""
    return [name for name in names if WORKER_PARAMETER.match(name)]


#: Metrics kubebench's telemetry adds to every run (see :mod:`kubebench.monitor.summary`): tables show
#: them only when asked, after the metrics the benchmark declares.
TELEMETRY_METRIC = re.compile(r"^(?:(?:system_)?cpu_percent_(?:mean|max)|memory_peak_bytes|"
                              r"gpu\d*_(?:utilization_(?:mean|max)|memory_peak_bytes|power_mean_watts))$")


def is_telemetry(metric: str) -> bool:
    """True for a metric added by kubebench's telemetry rather than reported by the workload."""
    return TELEMETRY_METRIC.match(metric) is not None


#: Parameter names that hold the CPU threads each replica uses (``threads``, ``num_threads``, ``omp_num_threads`` …).
THREAD_PARAMETER = re.compile(r"^(?:(?:n_?|num_?|omp_num_|intra_op_)?threads?(?:_per_(?:replica|worker|process))?)$",
                              re.IGNORECASE)


def thread_parameter(names: Sequence[str]) -> str | None:
    """The first of ``names`` that holds a number of threads per replica, else None."""
    return next((name for name in names if THREAD_PARAMETER.match(name)), None)


#: After the declared metrics, the ones people look for first, in the order vLLM's ``bench serve``
#: prints them: how many requests and how long, the throughputs, then the latencies (mean first,
#: then percentiles) and the errors; the load generator's checks of itself (:data:`SELF_CHECK_METRIC`)
#: come last, and everything else alphabetically between.
WELL_KNOWN_METRICS = ("requests_measured", "window_s", "request_throughput", "goodput", "output_tokens_per_s",
                      "input_tokens_per_s", "output_tokens_per_s_per_user")
LATENCY_PREFIXES = ("ttft_", "tpot_", "itl_", "e2e_")
WELL_KNOWN_LAST = ("error_rate", "requests_failed")
SELF_CHECK_METRIC = re.compile(r"^(?:arrival_|client_|loop_delay_|request_rate_|concurrency_)")


def metric_order(names: Sequence[str]) -> list[str]:
    """``names`` in the order of :data:`WELL_KNOWN_METRICS` (see there)."""
    def key(name: str) -> tuple[int, int, int, str]:
        if name in WELL_KNOWN_METRICS:
            return (0, WELL_KNOWN_METRICS.index(name), 0, name)
        prefix = next((p for p in LATENCY_PREFIXES if name.startswith(p)), None)
        if prefix is not None:
            rest = name[len(prefix):]
            number = int(rest[1:]) if rest[:1] == "p" and rest[1:].isdigit() else -1 if rest == "mean" else 1000
            return (1, LATENCY_PREFIXES.index(prefix), number, name)
        if name in WELL_KNOWN_LAST or name.startswith("error_rate_"):
            return (2, 0, 0, name)
        return (4 if SELF_CHECK_METRIC.match(name) else 3, 0, 0, name)

    return sorted(names, key=key)
