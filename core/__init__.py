"""kernelfuse: Multiple Kernel Learning assembled from registered parts.

The public surface: :func:`solve`, :class:`Problem`, :class:`Result`, the
family objectives in :mod:`kernelfuse.problem.objectives`, the part interfaces
(:class:`Loss`, :class:`Regularizer`, :class:`ProxOperator`,
:class:`MirrorMap`, :class:`Oracle`, :class:`OuterOptimizer`,
:class:`Solver`, :class:`Recipe`) and the plugin registry
(:func:`get_registry`, hooks in :mod:`kernelfuse.parts.hookspecs`).
"""

from __future__ import annotations

import importlib.metadata as _metadata

from kernelfuse.assembly.api import solve
from kernelfuse.assembly.recipe import Recipe, check_requirements
from kernelfuse.assembly.result import Iteration, Result
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
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.mirror_map import MirrorMap
from kernelfuse.parts.optimizer import OuterOptimizer
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.parts.prox import ProxOperator
from kernelfuse.parts.registry import Registry, get_registry
from kernelfuse.parts.regularizer import Regularizer
from kernelfuse.problem.families import FAMILIES, Family, get_family
from kernelfuse.problem.instance import Problem

__version__ = _metadata.version("kernelfuse")

__all__ = [
    "ConvergenceWarning", "FAMILIES", "Family", "FileWriteError", "IncompatiblePartsError", "Iteration",
    "KernelfuseError",
    "Loss", "MirrorMap", "Model", "Oracle", "OracleAnswer", "OuterOptimizer",
    "Problem", "ProxOperator", "Recipe", "Registry", "Regularizer", "Result",
    "Solver", "SolverError", "UnknownNameError", "ValidationError",
    "check_requirements", "get_family", "get_registry", "solve", "__version__",
]
