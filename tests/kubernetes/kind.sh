#!/bin/sh
# `make test-kind`: a kind cluster with the operators at the versions docs/kubernetes-conformance.md was
# read at, then tests/kubernetes/test_k8s_real_cluster.py against it. Needs Docker, kind and kubectl.
#
#   KIND_CLUSTER   the cluster's name (default kubebench-test); it is made if missing, kept afterwards
#                  (KIND_DELETE=1 deletes it at the end)
#   KIND_NODE      the node image (default kindest/node:v1.33.1)
#   MPI_IMAGE      an image with Open MPI, mpi4py and sshd for the MPIJob tests (default: built from the
#                  Dockerfile's `mpi` target and loaded into the cluster; MPI_IMAGE=none skips them)
#
# mpi-operator's MPIJob (kubeflow.org/v2beta1) and training-operator's (kubeflow.org/v1) are one CRD:
# this cluster has mpi-operator's, and training-operator runs without its MPIJob scheme.
set -eu

CLUSTER=${KIND_CLUSTER:-kubebench-test}
NODE=${KIND_NODE:-kindest/node:v1.33.1}
TRAINING_OPERATOR=v1.9.4
TRAINER=v2.3.0
KUEUE=v0.19.2
MPI_OPERATOR=v0.8.0
PYTHON=${PYTHON:-.venv/bin/python}
CONTEXT=kind-$CLUSTER
KUBECONFIG_FILE=${KUBECONFIG_FILE:-$(mktemp)}
k() { kubectl --kubeconfig "$KUBECONFIG_FILE" --context "$CONTEXT" "$@"; }

for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null || { echo "make test-kind needs $tool" >&2; exit 2; }
done

if ! kind get clusters | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" --image "$NODE" --kubeconfig "$KUBECONFIG_FILE" --wait 5m
else
  kind export kubeconfig --name "$CLUSTER" --kubeconfig "$KUBECONFIG_FILE"
fi

# training-operator v1 (PyTorchJob, TFJob, JAXJob, XGBoostJob), without its MPIJob scheme
k apply --server-side -k "github.com/kubeflow/trainer.git/manifests/overlays/standalone?ref=$TRAINING_OPERATOR"
k -n kubeflow patch deployment training-operator --type=json -p '[{"op": "add",
  "path": "/spec/template/spec/containers/0/args", "value": ["--enable-scheme=pytorchjob", "--enable-scheme=tfjob",
  "--enable-scheme=jaxjob", "--enable-scheme=xgboostjob", "--enable-scheme=paddlejob"]}]'
k delete crd mpijobs.kubeflow.org --ignore-not-found
# mpi-operator (MPIJob kubeflow.org/v2beta1)
k apply --server-side -f "https://raw.githubusercontent.com/kubeflow/mpi-operator/$MPI_OPERATOR/deploy/v2beta1/mpi-operator.yaml"
# Kubeflow Trainer v2 with JobSet, and its runtimes (the Helm chart leaves them out by default)
k apply --server-side -k "github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=$TRAINER"
k -n kubeflow-system wait --for=condition=Available deployment --all --timeout=5m
k apply --server-side -k "github.com/kubeflow/trainer.git/manifests/overlays/runtimes?ref=$TRAINER"
# Kueue with its default configuration (no PyTorchJob, no TFJob), one ClusterQueue of 1 CPU
k apply --server-side -f "https://github.com/kubernetes-sigs/kueue/releases/download/$KUEUE/manifests.yaml"
k -n kueue-system wait --for=condition=Available deployment/kueue-controller-manager --timeout=5m
k apply -f - <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: kubebench}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, memory]
      flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}, {name: memory, nominalQuota: 4Gi}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: kubebench, namespace: default}
spec: {clusterQueue: kubebench}
EOF
k -n kubeflow wait --for=condition=Available deployment/training-operator --timeout=5m
k -n mpi-operator wait --for=condition=Available deployment/mpi-operator --timeout=5m

IMAGE=${MPI_IMAGE:-kubebench/cnn-mpi:0.1.0}
if [ "$IMAGE" != none ]; then
  if [ -z "${MPI_IMAGE:-}" ]; then
    docker build --target mpi -t "$IMAGE" .
  fi
  kind load docker-image "$IMAGE" --name "$CLUSTER"
  export KUBEBENCH_TEST_MPI_IMAGE="$IMAGE"
fi

status=0
KUBEBENCH_TEST_KUBECONFIG="$KUBECONFIG_FILE" KUBEBENCH_TEST_NAMESPACE=default \
KUBEBENCH_TEST_OPERATORS=training-operator,mpi-operator,trainer,kueue KUBEBENCH_TEST_QUEUE=kubebench \
  "$PYTHON" -m pytest -v -p no:cacheprovider tests/kubernetes/test_k8s_real_cluster.py "$@" || status=$?
if [ "${KIND_DELETE:-0}" = 1 ]; then
  kind delete cluster --name "$CLUSTER"
fi
exit $status
