"""Monitoring: telemetry of every run (local sampler, Prometheus for Kubernetes), Prometheus exposition,
the Pushgateway reporter and the Grafana dashboard.

Modules import their heavy libraries (psutil, pynvml, prometheus_client, the Grafana SDK) inside
functions, so that loading the spec's models stays cheap.
"""
