# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

DEMO_STAMP := $(VENV)/.demo-installed
$(DEMO_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,plot]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/kernelfuse demo --output demo-output

test: $(STAMP)
	$(PY) -m pytest

# Benchmarks measure, they never test: each prints ratio tables and writes
# JSON + PNG under benchmarks/results/ (see benchmarks/README.md).
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) benchmarks/vskl_scaling.py
	$(PY) benchmarks/vskl_accuracy.py
	$(PY) benchmarks/spicymkl_scaling.py

bench-quick: $(BENCH_STAMP)
	$(PY) benchmarks/vskl_scaling.py --quick
	$(PY) benchmarks/vskl_accuracy.py --quick
	$(PY) benchmarks/spicymkl_scaling.py --quick

clean:
	rm -rf $(VENV) demo-output build dist
