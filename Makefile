# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of PyTorch; an unpinned torch pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0

# Debian packages the test suite runs for real (servers, browser, MPI); `make test` installs them.
DEBIAN_PACKAGES ?= postgresql prometheus prometheus-pushgateway chromium openmpi-bin libopenmpi-dev

.PHONY: setup setup-dev deps-debian demo test test-tensorflow bench bench-store bench-cnn clean

# `setup`: what the demo needs (the package and PyTorch); `setup-dev`: the Debian packages and the
# test extras on top (mpi4py compiles against Debian's Open MPI, so those come first).
$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e .
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

demo: setup
	$(VENV)/bin/kubebench run examples/pytorch-cnn/benchmark.yaml

# Idempotent: installs only what is missing, and only where apt-get can (as root).
deps-debian:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing Debian packages (install them as root): $$missing"; fi; \
	fi

test: setup-dev deps-debian $(VENV)/.tensorflow
	$(PY) -m pytest

# Only the tests that need TensorFlow (`make test` runs them too).
test-tensorflow: $(VENV)/.tensorflow
	$(PY) -m pytest -m tensorflow

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
	rm -rf $(VENV) kubebench-data
