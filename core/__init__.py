"""kernelfuse: Multiple Kernel Learning assembled from registered parts.

The public surface: :func:`solve`, :class:`Problem`, :class:`Result`, the
family objectives (:func:`evaluate`, :func:`evaluate_parts`), the part interfaces
(:class:`Loss`, :class:`Regularizer`, :class:`ProxOperator`,
:class:`MirrorMap`, :class:`Oracle`, :class:`OuterOptimizer`, :class:`SVMSolver`,
:class:`Solver`, :class:`Recipe`), the plugin registry (:func:`get_registry`,
:data:`hookimpl`) and what a plugin's solver needs (:class:`History`,
:func:`relative_gap`, :func:`combined_kernel`, :func:`quadratic_forms`,
:func:`vskl_lower_bound`): a third-party plugin needs nothing else.
"""

from __future__ import annotations

import importlib.metadata as _metadata

from kernelfuse.assembly.api import solve
from kernelfuse.assembly.recipe import Recipe, check_requirements
from kernelfuse.assembly.result import History, Iteration, Result, relative_gap
from kernelfuse.assembly.solver import Model, Solver
from kernelfuse.errors import (
    ConvergenceWarning,
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
from kernelfuse.parts.regularizer import Regularizer
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver
from kernelfuse.problem.duality import vskl_lower_bound
from kernelfuse.problem.families import FAMILIES, Family, get_family
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.objectives import evaluate, evaluate_parts

__version__ = _metadata.version("kernelfuse")

__all__ = [
    "ConvergenceWarning", "FAMILIES", "Family", "FileWriteError", "History", "IncompatiblePartsError", "Iteration",
    "KernelfuseError",
    "Loss", "MirrorMap", "Model", "Oracle", "OracleAnswer", "OuterOptimizer",
    "Problem", "ProxOperator", "Recipe", "Registry", "Regularizer", "Result",
    "SVMSolution", "SVMSolver", "Solver", "SolverError", "UnknownNameError", "ValidationError",
    "check_requirements", "combined_kernel", "evaluate", "evaluate_parts", "get_family", "get_registry",
    "hookimpl", "quadratic_forms", "relative_gap", "solve", "vskl_lower_bound", "__version__",
]
