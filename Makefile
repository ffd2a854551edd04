# The two commands of the README: `make demo` and `make test`. Both work on
# a fresh machine: they install what they need, then build, then run.
# `make lint typecheck` are the checks CI runs beside the tests; `make fmt`
# rewrites the tree in the house style.

VENV   ?= .venv
PY     := $(VENV)/bin/python
JOBS   ?= $(shell nproc)
export CARGO_BUILD_JOBS := $(JOBS)
# The Rust crates with tests (the binding is a cdylib, tested from Python).
CRATES := -p corebench-accesslog -p corebench-engine -p corebench-serve
# pyproject.toml is the one list of Python dependencies: the build backend,
# the package's own, and the extras named here.
EXTRAS := test dev

.PHONY: models demo test test-rust test-python build venv system-deps bench bench-h2 lint fmt typecheck clean fuzz-smoke

demo: build system-deps
	$(PY) scripts/demo.py

test: test-rust test-python

test-rust:
	cargo test --release $(CRATES)

test-python: build system-deps
	$(PY) -m pytest -q --durations=15 tests

# The package is byte-compiled as pip does on install: the editable install
# imports from python/, and where PYTHONDONTWRITEBYTECODE is set every start
# would compile it again (40 ms of CPU per `corebench load`).
build: venv
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --quiet
	$(PY) -m compileall -q python/corebench

venv: $(VENV)/.installed

# The venv's interpreter: the distribution's where it can make one, else the
# first python3 on PATH. Debian builds its python3 with PGO and LTO; a start
# of `corebench load` (imports, typer, pydantic's models) took 22-25% less
# CPU on it than on pyenv's 3.11.7 (-O2, no PGO), and that start is counted
# in every run's CPU per request (docs/benchmarks.md). PYTHON=... overrides.
PYTHON ?= $(shell /usr/bin/python3 -c 'import ensurepip' 2>/dev/null && echo /usr/bin/python3 || echo python3)

$(VENV)/.installed: pyproject.toml scripts/pydeps.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $$($(PY) scripts/pydeps.py $(EXTRAS))
	touch $@

system-deps:
	scripts/install-system-deps

lint: venv
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	PYTHONPATH=python $(VENV)/bin/lint-imports

fmt: venv
	cargo fmt --all
	$(VENV)/bin/ruff check --fix-only --quiet .
	$(VENV)/bin/ruff format .

# mypy (strict) on the package, then the compiled module against its stub.
typecheck: build
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest corebench._engine

# The engine config's pydantic models, regenerated from the Rust types.
models: build
	$(PY) scripts/gen_engine_models.py

bench: build system-deps
	bench/generator-cost.sh

# HTTP/2's CPU per request beside h2load, oha and the h2 crate (docs/http2.md).
# oha is built from crates.io into bench/.tools once (a few minutes).
# H2_COST_ARGS: e.g. "--seconds 2 --rounds 1" for a quick look.
bench-h2: build system-deps
	test -x bench/.tools/bin/oha || cargo install oha --locked --root bench/.tools
	cargo build --release --quiet --manifest-path bench/h2-crate-client/Cargo.toml
	$(PY) bench/h2_cost.py $(H2_COST_ARGS)

# A minute of each cargo-fuzz target (fuzz/, docs/fuzzing.md) from its seeds
# in fuzz/corpus; what a run adds goes to fuzz/scratch, the seeds stay as
# committed. Needs the nightly toolchain; not part of CI.
fuzz-smoke:
	cargo +nightly --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
	cd fuzz && for t in http_response http_request accesslog; do \
		mkdir -p scratch/$$t && \
		cargo +nightly fuzz run $$t scratch/$$t corpus/$$t -- -max_total_time=60 -print_final_stats=1 || exit 1; \
	done

clean:
	rm -rf $(VENV) target
