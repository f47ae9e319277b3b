"""The model a distributed solve returns: weights on the kernels' features, and how they were found."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.assembly.result import Iteration
from kernelfuse.distributed import blocks


@attrs.frozen(eq=False)
class FeatureModel:
    """A model on low-rank kernel features: ``f(x) = [s_m phi_m(x)]_m . v + b``, and how it was found.

    ``weights``: ``v`` (``D``), kernel ``m``'s in ``offsets[m]:offsets[m + 1]``; ``specs``,
    ``scales``, ``normalization``: the map of new rows to features.  ``objective`` is ``P`` at the
    model (OBJECTIVES.md units, with ``||f_m||`` bounded by ``||v_m||``), ``dual_objective`` a
    certified lower bound on the optimum, ``gap`` their relative difference; ``passes`` the reads
    of every feature block.
    """

    weights: np.ndarray
    intercept: float
    offsets: np.ndarray
    specs: tuple[Any, ...]
    scales: np.ndarray
    normalization: str
    objective: float
    dual_objective: float
    gap: float
    status: str
    message: str
    n_iter: int
    passes: int
    time: float
    family: str
    loss: str
    history: tuple[Iteration, ...] = ()

    @property
    def kernel_norms(self) -> np.ndarray:
        """``||v_m||`` for every kernel."""
        return block_norms(self.weights, self.offsets)

    @property
    def kernel_weights(self) -> np.ndarray:
        """Each kernel's share ``||v_m|| / sum_k ||v_k||`` (zeros for the zero model)."""
        norms = self.kernel_norms
        return norms / norms.sum() if norms.sum() > 0 else norms

    def decision_function(self, X: Any) -> Any:
        """``f(x)`` for the rows of ``X``: a NumPy array, or for a ``dask.array`` a lazy one of the
        same row blocks (``map_blocks``)."""
        if hasattr(X, "map_blocks"):
            from kernelfuse.distributed.features import as_row_blocks

            X = as_row_blocks(X, "X")
            return X.map_blocks(_decision_block, self, drop_axis=1, dtype=np.float64)
        return _decision_block(np.asarray(X, dtype=np.float64), self)


def _decision_block(X: np.ndarray, model: FeatureModel) -> np.ndarray:
    phi = blocks.block_features(X, model.specs, model.normalization, model.offsets)
    return phi @ (model.scales * model.weights) + model.intercept


def block_norms(v: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``||v_m||`` for the blocks ``offsets[m]:offsets[m + 1]``."""
    return np.sqrt(np.add.reduceat(v * v, offsets[:-1])) if v.size else np.zeros(0)
