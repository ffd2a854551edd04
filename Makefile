# The two commands of the README: `make demo` and `make test`. Both work on
# a fresh machine: they install what they need, then build, then run.

VENV   ?= .venv
PY     := $(VENV)/bin/python
JOBS   ?= $(shell nproc)
export CARGO_BUILD_JOBS := $(JOBS)

.PHONY: demo test test-rust test-python build venv system-deps bench clean

demo: build system-deps
	$(PY) scripts/demo.py

test: test-rust test-python

test-rust:
	cargo test --release -p corebench-engine

test-python: build system-deps
	$(PY) -m pytest -q tests

build: venv
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --quiet

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.5,<2" "typer>=0.29" "rich>=13" "pydantic>=2.6" "psutil>=5.9" "jinja2>=3.1" "numpy>=1.26" "scipy>=1.11" "matplotlib>=3.8" "pytest>=8" "hdrhistogram>=0.10" "ray>=2.9"
	touch $@

system-deps:
	scripts/install-system-deps

bench: build system-deps
	bench/generator-cost.sh

clean:
	rm -rf $(VENV) target
