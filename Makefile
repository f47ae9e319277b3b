# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

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

clean:
	rm -rf $(VENV) demo-output build dist
