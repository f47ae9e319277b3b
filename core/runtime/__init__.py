"""The resources a run uses: its deadline, memory, cores (joblib, Dask) and files.

Layer 1 of core: imports only :mod:`kernelfuse.errors` and :mod:`kernelfuse.validation`.
"""
