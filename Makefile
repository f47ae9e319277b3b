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

demo: $(STAMP)
	$(PY) examples/breast_cancer_problem.py demo-output/problem.npz
	$(VENV)/bin/kernelfuse solve demo-output/problem.npz --solver cvxpy --family l1_mkl \
		--loss logistic --C 0.5 --output demo-output/result.npz

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

bench-quick: $(BENCH_STAMP)
	$(PY) benchmarks/vskl_scaling.py --quick
	$(PY) benchmarks/vskl_accuracy.py --quick

clean:
	rm -rf $(VENV) demo-output build dist
