"""What users run: scikit-learn estimators (and their cross-validated forms), the CLI and its
configs, saved models, the demo, kernel grids, progress and metrics.

Layer 6 of core, the top: imports any layer below.
"""
