"""Shared numerics: array algorithms several parts and solvers use, with no part contract.

The SVM dual's values and intercept (:mod:`.svm_dual`), its curvature in the kernel weights
(:mod:`.svm_curvature`), quadratic programs on products of simplices (:mod:`.simplex_qp`) and
the kernel geometry of the two-stage methods (:mod:`.geometry`).  Below :mod:`kernelfuse.kernels`
in the layers (docs/architecture.md): it imports nothing of kernelfuse but the base modules.
"""
