# kubebench's images, one build target each (see docs/kubernetes.md):
#   docker build --target runner -t kubebench:0.1.0 .        kubebench itself: the runner and dashboard
#                                                            that `kubebench deploy manifests` starts
#   docker build --target cnn    -t kubebench/cnn:0.1.0 .    PyTorch (CPU) + kubebench: the examples
#                                                            pytorch-cnn, jpeg-loader, mlperf-trainjob, inference,
#                                                            kubebench-v1-compat, llm-train, llm-serving
#   docker build --target mpi    -t kubebench/cnn-mpi:0.1.0 . the cnn image + Open MPI, mpi4py and an SSH
#                                                            server: mpi-cnn (MPIJob launcher and workers)
#   docker build --target tf     -t kubebench/tf:0.1.0 .     TensorFlow (CPU) + kubebench: tf-cnn
#   docker build --target jax    -t kubebench/jax:0.1.0 .    JAX (CPU) + optax + kubebench: jax-train
#   docker build --target xgboost -t kubebench/xgboost:0.1.0 . XGBoost (CPU) + kubebench: xgb-train
# GPU builds of cnn: --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu124
ARG PYTHON=python:3.11-slim

FROM ${PYTHON} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /opt/kubebench
COPY pyproject.toml README.md ./
COPY src ./src
# A numeric non-root user: PodSecurity `restricted` pods check runAsNonRoot against it.
RUN useradd --uid 1000 --create-home --shell /usr/sbin/nologin kubebench

FROM base AS runner
# The store is PostgreSQL in a cluster (SQLite on a shared claim written by several pods is not safe).
RUN pip install ".[cli,postgres]" && mkdir -p /kubebench && chown kubebench:kubebench /kubebench
ENV KUBEBENCH_HOME=/kubebench
USER 1000
WORKDIR /kubebench
ENTRYPOINT ["kubebench"]
CMD ["--help"]

FROM base AS cnn
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --extra-index-url "${TORCH_INDEX}" ".[job,torch]"
# The examples' own scripts (kubebench-v1-compat's runner.py …) for runs outside `deploy manifests`,
# which mounts the spec's folder into the job pods instead.
COPY examples /opt/kubebench/examples
USER 1000
WORKDIR /workspace

FROM cnn AS mpi
USER root
# mpi-operator v2 reaches the ranks over SSH with the key it mounts at /root/.ssh (its default
# sshAuthMountPath): the workers run sshd as root, so this image is not for `restricted` namespaces.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev openssh-server openssh-client gcc \
 && pip install ".[job,mpi]" \
 && apt-get purge -y gcc && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/sshd && ssh-keygen -A \
 && sed -i "s/[ #]\(.*StrictHostKeyChecking \).*/ \1no/g" /etc/ssh/ssh_config \
 && echo "    UserKnownHostsFile /dev/null" >> /etc/ssh/ssh_config \
 && sed -i "s/#\(StrictModes \).*/\1no/g" /etc/ssh/sshd_config
ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CMD ["/usr/sbin/sshd", "-De"]

FROM base AS tf
RUN pip install ".[job,tensorflow]"
USER 1000
WORKDIR /workspace

FROM base AS jax
RUN pip install ".[job,jax]"
USER 1000
WORKDIR /workspace

FROM base AS xgboost
RUN pip install ".[job,xgboost]"
USER 1000
WORKDIR /workspace
