"""Real workloads that kubebench ships for demos and tests (run as ``python -m kubebench.workloads.<name>``)."""
