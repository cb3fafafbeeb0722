# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of PyTorch; an unpinned torch pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0

# Debian packages the test suite runs for real (servers, browser, MPI); `make test` installs them.
DEBIAN_PACKAGES ?= postgresql prometheus prometheus-pushgateway chromium openmpi-bin libopenmpi-dev

.PHONY: setup deps-debian demo test bench clean

$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

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

test: setup deps-debian
	$(PY) -m pytest

bench: setup
	$(PY) bench/overhead.py

clean:
	rm -rf $(VENV) kubebench-data
