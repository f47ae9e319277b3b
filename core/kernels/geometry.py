"""Deprecated alias of :mod:`kernelfuse.numerics.geometry`, where the module moved."""

import warnings

from kernelfuse.numerics.geometry import *  # noqa: F403

warnings.warn("kernelfuse.kernels.geometry moved to kernelfuse.numerics.geometry",
              DeprecationWarning, stacklevel=2)
