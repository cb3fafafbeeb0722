"""kubebench as a step of ML pipelines: the Kubeflow Pipelines components (:mod:`.kfp`), the Argo
WorkflowTemplate (:mod:`.argo`), the Tekton Task (:mod:`.tekton`), what their steps share
(:mod:`.steps`) and what a step reports (:mod:`.outputs`). docs/pipelines.md shows each, and the
GitHub Actions job."""
