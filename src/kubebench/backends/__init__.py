"""Backends run rendered jobs: local processes (the embedded default) or Kubernetes."""
