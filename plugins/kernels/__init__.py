"""Kernel functions on feature vectors (kind ``kernel``)."""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.kernels.chi_squared import ChiSquared
from kernelfuse.plugins.kernels.constant import Constant
from kernelfuse.plugins.kernels.gaussian import Gaussian
from kernelfuse.plugins.kernels.laplacian import Laplacian
from kernelfuse.plugins.kernels.linear import Linear
from kernelfuse.plugins.kernels.negative_distance import NegativeDistance
from kernelfuse.plugins.kernels.nystrom import Nystrom
from kernelfuse.plugins.kernels.polynomial import Polynomial
from kernelfuse.plugins.kernels.precomputed import Precomputed
from kernelfuse.plugins.kernels.random_features import RandomFourierFeatures
from kernelfuse.plugins.kernels.sigmoid import Sigmoid

KERNELS = (Linear, Polynomial, Gaussian, Laplacian, ChiSquared, Sigmoid, NegativeDistance, Constant,
           Precomputed, Nystrom, RandomFourierFeatures)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for kernel in KERNELS:
        registry.add("kernel", kernel.name, kernel)
