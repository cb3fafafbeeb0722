# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of PyTorch; an unpinned torch pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0

# Debian packages the test suite runs for real (servers, browser, MPI); `make test` installs them.
DEBIAN_PACKAGES ?= postgresql prometheus prometheus-pushgateway chromium openmpi-bin libopenmpi-dev

.PHONY: setup setup-dev deps-debian demo check test test-tensorflow test-kind mutation bench bench-store bench-cnn clean

# `setup`: what the demo needs (the package and PyTorch); `setup-dev`: the Debian packages and the
# test extras on top (mpi4py compiles against Debian's Open MPI, so those come first).
$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[cli]"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(MAKE) --no-print-directory deps-debian
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

setup-dev: $(VENV)/.installed-dev

# The TensorFlow extra (a ~1.5 GB CPU build): installed for the tests, not for the demo.
$(VENV)/.tensorflow: $(VENV)/.installed-dev
	$(PY) -m pip install -q -e ".[tensorflow]"
	touch $@

# The JAX and XGBoost extras (CPU builds, ~300 MB): installed for the tests, not for the demo.
$(VENV)/.jax-xgboost: $(VENV)/.installed-dev
	$(PY) -m pip install -q -e ".[jax,xgboost]" "$(TORCH)"
	touch $@

# LLM tools kubebench drives, in a venv of their own (they pull transformers and datasets and pin their
# own versions of what kubebench also uses): GuideLLM, one of the load tools whose results kubebench
# reads, and Hugging Face's `transformers serve`, a real engine (continuous batching, paged KV cache).
# tests/serving/test_llm_tools.py runs both for real; PyTorch is the same CPU build.
LLM_TOOLS ?= guidellm==0.8.1 transformers[serving]==5.24.0
LLM_TOOLS_VENV ?= .venv-llm-tools
$(LLM_TOOLS_VENV)/.installed: Makefile
	python3 -m venv $(LLM_TOOLS_VENV)
	$(LLM_TOOLS_VENV)/bin/python -m pip install -q --upgrade pip
	$(LLM_TOOLS_VENV)/bin/python -m pip install -q $(foreach t,$(LLM_TOOLS),"$(t)") "$(TORCH)"
	touch $@

# Kubeflow Pipelines' protos in a venv of their own: kfp-pipeline-spec needs protobuf<7, the project's
# venv has 7.x. tests/pipelines/test_kfp.py parses the emitted components and the steps' executor
# input and output with them. Exactly these, without their dependencies: kfp-kubernetes' protos load
# without the kfp SDK, which pins an old Kubernetes client; pipeline_spec_pb2 imports google.rpc.
KFP_PROTOS ?= kfp-pipeline-spec==2.17.3 kfp-kubernetes==2.17.3 protobuf==6.33.6 googleapis-common-protos==1.76.0
KFP_VENV ?= .venv-kfp
$(KFP_VENV)/.installed: Makefile
	python3 -m venv $(KFP_VENV)
	$(KFP_VENV)/bin/python -m pip install -q --no-deps $(foreach t,$(KFP_PROTOS),"$(t)")
	touch $@

demo: setup
	$(VENV)/bin/kubebench run examples/pytorch-cnn/benchmark.yaml

# Idempotent: installs only what is missing (apt-get, as root); fails when a package is still missing.
deps-debian:
	@installed() { dpkg-query -W -f='$${Status}' "$$1" 2>/dev/null | grep -q "install ok installed"; }; \
	missing=$$(for p in $(DEBIAN_PACKAGES); do installed $$p || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "missing Debian packages (install them as root): $$missing" >&2; exit 1; fi; \
	  echo "installing Debian packages: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  still=$$(for p in $$missing; do installed $$p || echo $$p; done); \
	  if [ -n "$$still" ]; then echo "could not install Debian packages: $$still" >&2; exit 1; fi; \
	fi

# Line and branch coverage of src/kubebench (subprocesses included); the floor only goes up
# (docs/testing.md has the figure it was set from).
COVERAGE_FLOOR ?= 93
PYTEST_ARGS ?=

# Static checks (configured in pyproject.toml): ruff (pyflakes, bugbear, import order), mypy over
# src/, and import-linter's contracts of the data flow (spec → plan → render → backends → collect →
# store → analyse → present; cli and web on top).
check: setup-dev
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy src/kubebench
	$(VENV)/bin/lint-imports

test: setup-dev deps-debian $(VENV)/.tensorflow $(VENV)/.jax-xgboost $(LLM_TOOLS_VENV)/.installed $(KFP_VENV)/.installed check
	$(PY) -m pytest --cov=kubebench --cov-branch --cov-report=term:skip-covered --cov-fail-under=$(COVERAGE_FLOOR) $(PYTEST_ARGS)

# Only the tests that need TensorFlow (`make test` runs them too).
test-tensorflow: $(VENV)/.tensorflow
	$(PY) -m pytest -m tensorflow

# The Kubernetes checks against real operators, for whoever has Docker: a kind cluster with
# training-operator, mpi-operator, Trainer (and its runtimes) and Kueue at pinned versions, then
# tests/kubernetes/test_k8s_real_cluster.py (docs/kubernetes-kind.md; 10–20 minutes the first time).
test-kind: setup-dev
	PYTHON=$(PY) sh tests/kubernetes/kind.sh $(PYTEST_ARGS)

# Mutation testing of the core modules (mutmut, configured in pyproject.toml; not in CI: tens of
# minutes). The survivors are listed in docs/mutation.md; `$(VENV)/bin/mutmut results` lists them again.
# PYTHONPATH points subprocesses (`python -m kubebench` in the CLI tests) at the mutated copy too; the
# folder must exist before Python starts, or the import system caches it as missing for good.
MUTATE ?= kubebench.plan.* kubebench.collect.* kubebench.output_files.* kubebench.store.records.* kubebench.backends.reasons.* \
	kubebench.attempts.* kubebench.analyse.* kubebench.storage.files.*
mutation: setup-dev
	rm -rf mutants && mkdir -p mutants/src
	PYTHONPATH=$(CURDIR)/mutants/src $(VENV)/bin/mutmut run --max-children 2 $(MUTATE)
	$(VENV)/bin/mutmut results

# The harness's own performance in one table (fidelity, overhead per run, `--help`, `results` on
# 10,000 runs; 3–5 min), then adaptive repeats vs fixed (1–3 min). Fails if a target is missed.
bench: setup-dev
	$(PY) bench/harness.py; status=$$?; $(PY) bench/adaptive_repeats.py && exit $$status

# The results store at scale (100,000 runs) on SQLite and on a throwaway PostgreSQL server: minutes.
bench-store: setup-dev
	$(PY) bench/store_scale.py

# kubebench beside what users would pick instead: Hydra's multirun (overhead per run, fixed cost) and
# MLflow's SQLite store (reading 10,000 runs back, recording a run). Hydra and MLflow are installed
# in bench/.venv-peers on first use, never in the project's environment: 15–25 minutes.
.PHONY: bench-peers
bench-peers: setup-dev
	$(PY) bench/peers.py

# The CNN workload through kubebench vs a bare PyTorch loop (20 alternated rounds pinned to one
# CPU), the step-interleaved A/B, and 1 → 2 worker scaling: 20–30 minutes on a 2-vCPU VM.
bench-cnn: setup
	$(PY) bench/cnn_fidelity.py

clean:
	rm -rf $(VENV) $(LLM_TOOLS_VENV) $(KFP_VENV) kubebench-data mutants .coverage .coverage.*
