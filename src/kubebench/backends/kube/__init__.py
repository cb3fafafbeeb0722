"""The Kubernetes backend: Kubeflow jobs (and batch Jobs) through the official client, tracked by watches."""
