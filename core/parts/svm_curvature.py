"""Deprecated alias of :mod:`kernelfuse.numerics.svm_curvature`, where the module moved."""

import warnings

from kernelfuse.numerics.svm_curvature import *  # noqa: F403

warnings.warn("kernelfuse.parts.svm_curvature moved to kernelfuse.numerics.svm_curvature",
              DeprecationWarning, stacklevel=2)
