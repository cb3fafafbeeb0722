# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of PyTorch; an unpinned torch pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0

.PHONY: setup demo test bench clean

$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/kubebench run examples/pytorch-cnn/benchmark.yaml

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) bench/overhead.py

clean:
	rm -rf $(VENV) kubebench-data
