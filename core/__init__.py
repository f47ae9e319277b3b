"""kernelfuse: Multiple Kernel Learning assembled from registered parts.

The public surface: :func:`solve`, :class:`Problem`, :class:`Result`, the
family objectives (:func:`evaluate`, :func:`evaluate_parts`), the part interfaces
(:class:`Loss`, :class:`Regularizer`, :class:`ProxOperator`,
:class:`MirrorMap`, :class:`Oracle`, :class:`OuterOptimizer`, :class:`SVMSolver`,
:class:`Solver`, :class:`Recipe`), the plugin registry (:func:`get_registry`,
:data:`hookimpl`) and what a plugin's solver needs (:class:`History`,
:func:`relative_gap`, :func:`combined_kernel`, :func:`quadratic_forms`,
:func:`vskl_lower_bound`, :func:`svm_at_weights`, and :class:`TwoStageMKL` with :class:`KernelWeights`
and :func:`simplex_weights` for a method that fixes the kernel weights, then fits one SVM): a third-party
plugin needs nothing else; and the scikit-learn
estimators :class:`MKLClassifier`, :class:`MKLRegressor`, :class:`MultiLabelMKLClassifier`, and
:class:`MKLClassifierCV`, :class:`MKLRegressorCV` (C chosen by cross-validation on a warm-started path).

The estimators and :class:`ConvergenceWarning` (a subclass of scikit-learn's) are imported
when first read (PEP 562 ``__getattr__``), so ``import kernelfuse`` does not import
scikit-learn (docs/estimators.md, "Importing").
"""

from __future__ import annotations

import importlib.metadata as _metadata
import logging as _logging
from typing import Any

from kernelfuse.assembly.api import solve
from kernelfuse.assembly.recipe import Recipe
from kernelfuse.assembly.requirements import check_requirements
from kernelfuse.assembly.result import History, Iteration, Result, relative_gap
from kernelfuse.assembly.solver import Model, Solver
from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL, simplex_weights
from kernelfuse.errors import (
    FileWriteError,
    IncompatiblePartsError,
    KernelfuseError,
    SolverError,
    UnknownNameError,
    ValidationError,
)
from kernelfuse.kernels.combined import combined_kernel, quadratic_forms
from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.mirror_map import MirrorMap
from kernelfuse.parts.optimizer import OuterOptimizer
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.parts.prox import ProxOperator
from kernelfuse.parts.registry import Registry, get_registry
from kernelfuse.parts.regularizer import Regularizer, SeparablePenalty
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver
from kernelfuse.problem.duality import vskl_lower_bound
from kernelfuse.problem.families import FAMILIES, Family, Param, all_families, get_family
from kernelfuse.problem.fixed_weights import WeightedSVM, svm_at_weights
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.objectives import evaluate, evaluate_parts, norm_penalised
from kernelfuse.validation import Domain

__version__ = _metadata.version("kernelfuse")

# The library prints nothing by itself: its messages reach the handlers an application
# configures (kernelfuse.runtime.logs).
_logging.getLogger("kernelfuse").addHandler(_logging.NullHandler())

#: Names read on first use: what imports scikit-learn (module holding each).
_LAZY = {
    "ConvergenceWarning": "kernelfuse.errors",
    "MKLClassifier": "kernelfuse.frontends.estimators",
    "MKLRegressor": "kernelfuse.frontends.estimators",
    "MultiLabelMKLClassifier": "kernelfuse.frontends.estimators",
    "MKLClassifierCV": "kernelfuse.frontends.cv_estimators",
    "MKLRegressorCV": "kernelfuse.frontends.cv_estimators",
}


#: Submodules read as attributes on first use (``kernelfuse.metrics`` after ``import kernelfuse``).
_LAZY_MODULES = ("metrics",)


def __getattr__(name: str) -> Any:
    """The names of ``_LAZY`` and the modules of ``_LAZY_MODULES``, imported when first read."""
    if name not in _LAZY and name not in _LAZY_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = (importlib.import_module(f"{__name__}.{name}") if name in _LAZY_MODULES
             else getattr(importlib.import_module(_LAZY[name]), name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ConvergenceWarning", "Domain", "FAMILIES", "Family", "FileWriteError", "History", "IncompatiblePartsError",
    "Iteration",
    "KernelWeights", "KernelfuseError",
    "Loss", "MKLClassifier", "MKLClassifierCV", "MKLRegressor", "MKLRegressorCV", "MirrorMap", "Model",
    "MultiLabelMKLClassifier",
    "Oracle", "OracleAnswer", "OuterOptimizer", "Param",
    "Problem", "ProxOperator", "Recipe", "Registry", "Regularizer", "Result", "SeparablePenalty",
    "SVMSolution", "SVMSolver", "Solver", "SolverError", "TwoStageMKL", "UnknownNameError", "ValidationError",
    "all_families", "check_requirements", "combined_kernel", "evaluate", "evaluate_parts", "get_family", "get_registry",
    "WeightedSVM", "hookimpl", "quadratic_forms", "relative_gap", "simplex_weights", "solve", "svm_at_weights",
    "norm_penalised", "vskl_lower_bound",
    "__version__",
]
