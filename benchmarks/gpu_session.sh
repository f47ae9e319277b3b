#!/bin/sh
# The GPU issue's checks as commands for a lent GPU machine (the device tool's `run`), whose
# image has PyTorch and CuPy but not Dask or array-api-compat, and fetches nothing.
#
#   sh benchmarks/gpu_session.sh prepare   here: the wheels the image lacks (about 5 MB, the
#                                          versions of this venv, for its Python 3.12) into
#                                          .gpu-wheels/ (git ignores it), and the two commands
#   COMMIT=<sha> sh benchmarks/gpu_session.sh gpu     there, carry .gpu-wheels: installs them and
#                                          kernelfuse, runs benchmarks/gpu.py (about 5 minutes
#                                          on an H200)
#   COMMIT=<sha> sh benchmarks/gpu_session.sh cores   there, within 30 s of the first (the machine
#                                          stays warm that long): benchmarks/parallel_cores.py at
#                                          1, 10 and 16 jobs and 16 Dask workers both ways (about
#                                          3 minutes on 16 cores)
#
# Each writes its JSON under $OUT (the device tool's folder that comes back); copy it to
# benchmarks/results/ here and run `python benchmarks/report.py`.  SMOKE=1 runs the same
# scripts at their smoke sizes on the CPU, with nothing installed (a check of this script).
set -eu
part=${1:-}
venv_python=${VENV_PYTHON:-.venv/bin/python}
case "$part" in
prepare)
    rm -rf .gpu-wheels
    "$venv_python" -m pip download -q --only-binary=:all: --python-version 3.12 \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d .gpu-wheels \
        "dask[distributed]==$("$venv_python" -c 'import dask; print(dask.__version__)')" \
        "array-api-compat==$("$venv_python" -c 'import array_api_compat; print(array_api_compat.__version__)')"
    commit=$(git rev-parse HEAD)
    echo "wheels: $(ls .gpu-wheels | wc -l) files, $(du -sh .gpu-wheels | cut -f1)"
    echo "run: COMMIT=$commit sh benchmarks/gpu_session.sh gpu     (carry .gpu-wheels, timeout_s 600)"
    echo "then: COMMIT=$commit sh benchmarks/gpu_session.sh cores  (carry .gpu-wheels, timeout_s 400)"
    exit 0 ;;
gpu|cores) ;;
*)
    echo "usage: sh benchmarks/gpu_session.sh prepare|gpu|cores" >&2
    exit 2 ;;
esac
out=${OUT:-benchmarks/results}
export PYTHONUNBUFFERED=1
if [ "${SMOKE:-0}" = 1 ]; then
    python=$venv_python
    if [ "$part" = gpu ]; then
        exec "$python" benchmarks/gpu.py --device cpu --xp strict --smoke --out "$out"
    fi
    exec "$python" benchmarks/parallel_cores.py --smoke --out "$out"
fi
python=python3
"$python" -m pip install -q --no-index --find-links .gpu-wheels "dask[distributed]" array-api-compat
"$python" -m pip install -q --no-deps --no-build-isolation -e .
commit=${COMMIT:-unknown}
if [ "$part" = gpu ]; then
    "$python" benchmarks/gpu.py --device cuda --out "$out" --commit "$commit"
else
    "$python" benchmarks/parallel_cores.py --jobs 1,10,16 --dask-workers 16 --out "$out" --commit "$commit"
fi
