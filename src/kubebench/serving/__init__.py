"""Serving benchmarks, the part that runs inside a job: the LLM load generator's client, its
per-request records and the metrics computed from them (exactly mergeable across load-generator
replicas), the client's self-validation, arrivals, prompts and SLOs.

Nothing here imports kubebench above its ground floor: the runner side reads the records back
(:mod:`kubebench.collect.serving`, with other load tools' result files in :mod:`kubebench.collect.interop`)
and searches for capacity (:mod:`kubebench.capacity`).
"""
