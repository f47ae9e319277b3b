"""Deprecated alias of :mod:`kernelfuse.numerics.simplex_qp`, where the module moved."""

import warnings

from kernelfuse.numerics.simplex_qp import *  # noqa: F403

warnings.warn("kernelfuse.kernels.simplex_qp moved to kernelfuse.numerics.simplex_qp",
              DeprecationWarning, stacklevel=2)
