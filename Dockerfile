# kubebench's image: the runner that `kubebench deploy manifests` starts in a cluster.
#   docker build -t kubebench:0.1.0 .
# With PyTorch too (an image that can also run the bundled workloads as a job's image):
#   docker build --build-arg EXTRAS=torch -t kubebench-torch:0.1.0 .
FROM python:3.11-slim

ARG EXTRAS=""
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    KUBEBENCH_HOME=/kubebench

WORKDIR /opt/kubebench
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install ".${EXTRAS:+[$EXTRAS]}" \
 && useradd --uid 1000 --create-home --shell /usr/sbin/nologin kubebench \
 && mkdir -p /kubebench \
 && chown kubebench:kubebench /kubebench

# The deploy manifests run it as this user (runAsNonRoot, fsGroup 1000 for the claim).
USER 1000
WORKDIR /kubebench
ENTRYPOINT ["kubebench"]
CMD ["--help"]
