"""One MKL solve over row blocks on a Dask cluster: features, passes, the primal solver, the model."""
