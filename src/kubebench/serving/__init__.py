"""Serving benchmarks: per-request records of an LLM load generator, the metrics computed from them
(exactly mergeable across load-generator replicas), the client's self-validation, SLOs, the capacity
search, and post-processors for other load tools' result files.
"""
