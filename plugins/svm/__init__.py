"""SVM solvers on a precomputed kernel (kind ``svm_solver``)."""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.svm.active_set import ActiveSetSVM
from kernelfuse.plugins.svm.libsvm import LibSVM
from kernelfuse.plugins.svm.osqp_qp import OSQPSolver


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for solver in (ActiveSetSVM, LibSVM, OSQPSolver):
        registry.add("svm_solver", solver.name, solver)
