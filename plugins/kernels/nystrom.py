"""Nystrom low-rank kernel ``k(x, z) ~= phi(x) . phi(z)`` from landmarks (Williams & Seeger 2001).

For a PSD base kernel ``k``, landmarks ``l_1 ... l_r`` among the training rows,
``W = [k(l_a, l_b)]`` and ``k_L(x) = [k(x, l_a)]_a``: ``phi(x) = W^{+1/2} k_L(x)``, so
``k~(x, z) = k_L(x)' W^+ k_L(z)``, exact on the landmarks (eigenvalues of ``W`` below
``tol * max`` dropped).  Landmarks are drawn uniformly, or by approximate ridge leverage
scores from a uniform oversample (Alaoui & Mahoney 2015; Musco & Musco 2017) at the ``lam``
whose estimated effective dimension is ``r / 2``, so that small clusters get landmarks.
The fitted kernel keeps its base by registered name and JSON parameters and its landmarks
and projection as arrays, so it saves with a model (:mod:`kernelfuse.frontends.persistence`,
which rebuilds the base kernel from the model's registry).
The choice of ``r / 2`` and the references: docs/kernels.md.
"""

from __future__ import annotations

import json
import math
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import REBUILT, KernelFunction
from kernelfuse.parts.registry import Registry, resolve_registry

#: Landmark sampling schemes of :meth:`Nystrom.fit`.
SAMPLINGS = ("uniform", "leverage")
#: Bisection steps on ``log lam`` for the default regularisation of leverage sampling: the
#: bracket is some 20 decades wide, so 40 halvings fix ``lam`` to a relative 1e-10.
BISECTION_STEPS = 40


class FeatureMap(KernelFunction):
    """A kernel given by explicit features: ``k(x, z) = phi(x) . phi(z)``, PSD by construction.

    ``on_pairwise`` keeps :class:`~kernelfuse.kernels.functions.KernelFunction`'s
    default (``self(pairs.X, pairs.Z)``): the inner products and distances a
    :class:`~kernelfuse.kernels.functions.Pairwise` shares between X and Z are of no use
    to a feature map, which needs ``phi(X)`` and ``phi(Z)``.
    """

    psd = True

    @property
    @abstractmethod
    def n_inputs(self) -> int:
        """The number of input features (columns) the map reads."""

    @abstractmethod
    def _map(self, X: np.ndarray) -> np.ndarray:
        """``phi`` of the rows of a float matrix with :attr:`n_inputs` columns."""

    def features(self, X: np.ndarray) -> np.ndarray:
        """``phi(x_i)`` for every row of ``X``: shape (n, rank)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_inputs:
            raise ValidationError(
                f"the {self.name} kernel reads {self.n_inputs} features, got an array of shape {X.shape}"
            )
        return self._map(X)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        phi = self.features(X)
        if np.shape(X) == np.shape(Z) and np.array_equal(X, Z):
            return phi @ phi.T  # one map, and an exactly symmetric product
        return phi @ self.features(Z).T

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        phi = self.features(X)
        return np.einsum("ij,ij->i", phi, phi)


def array_repr(array: np.ndarray) -> str:
    """An array field's repr: its shape, not its values."""
    return f"<array of shape {array.shape}>"


def frozen_array(ndim: int, what: str) -> Any:
    """A converter to a read-only finite float64 copy of ``ndim`` dimensions."""

    def convert(value: Any) -> np.ndarray:
        array = np.array(value, dtype=np.float64)
        if array.ndim != ndim or not np.isfinite(array).all():
            raise ValidationError(f"{what} must be a finite {ndim}-D array, got shape {array.shape}")
        array.flags.writeable = False
        return array

    return convert


def json_params(value: Any) -> tuple[tuple[str, Any], ...]:
    """Parameters (a mapping or ``(name, value)`` pairs) as sorted pairs of JSON values.

    Pairs, not a dict: :mod:`kernelfuse.frontends.persistence` reads a dict-valued
    field as a reference to a saved array.  The JSON round trip makes the
    value what a saved model reloads (tuples become lists).
    """
    try:
        params = json.loads(json.dumps(dict(value)))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"the base kernel's parameters must be JSON values: {exc}") from None
    return tuple(sorted(params.items()))


def describe_kernel(kernel: KernelFunction, registry: Registry) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """A kernel registered in ``registry`` as ``(name, JSON parameters)``, from which the
    registry rebuilds it."""
    kind = type(kernel)
    if not isinstance(kernel, KernelFunction) or not attrs.has(kind):
        raise ValidationError(f"the base kernel must be a registered attrs KernelFunction, got {kernel!r}")
    entry = registry.get("kernel", kernel.name)
    if entry.factory is not type(kernel):
        raise ValidationError(f"the base kernel {type(kernel).__name__} is not the registered kernel "
                              f"{kernel.name!r}")
    params = {field.name: getattr(kernel, field.name) for field in attrs.fields(kind)}
    if any(isinstance(value, np.ndarray) for value in params.values()):
        raise ValidationError(f"the base kernel {kernel.name!r} has array parameters: a Nystrom kernel "
                              "keeps its base as a name and JSON parameters")
    return kernel.name, json_params(params)


def build_base(name: str, params: Any, registry: Registry) -> KernelFunction:
    """The kernel ``name`` of ``registry`` built with ``params`` (a mapping or pairs)."""
    try:
        kernel: KernelFunction = registry.create("kernel", name, **dict(params))
    except TypeError as exc:
        raise ValidationError(f"base kernel {name!r}: {exc}") from None
    return kernel


def _rebuilt_base(fields: Mapping[str, Any], registry: Registry) -> KernelFunction:
    """A saved Nystrom kernel's base kernel, from its fields ``base`` and ``base_params``."""
    if not isinstance(fields.get("base"), str):
        raise TypeError(f"base must be a registered kernel name, got {fields.get('base')!r}")
    return build_base(fields["base"], json_params(fields.get("base_params", ())), registry)


@attrs.frozen(eq=False, kw_only=True)
class Nystrom(FeatureMap):
    """Nystrom features phi(x) = W^{+1/2} k(L, x) of a PSD base kernel on r landmarks L (Williams-Seeger).

    Build it with :meth:`fit`; the fields but ``base_kernel`` are what a saved model stores.
    """

    name = "nystrom"
    #: Registered name of the PSD base kernel.
    base: str
    #: The base kernel's parameters: sorted ``(name, JSON value)`` pairs (a mapping is accepted).
    base_params: tuple[tuple[str, Any], ...] = attrs.field(default=(), converter=json_params)
    # mypy's attrs plugin reads named converters only, not frozen_array(...)'s: the ignores below.
    #: The landmarks, shape (r, d): rows of the features the kernel reads.
    landmarks: np.ndarray = attrs.field(converter=frozen_array(2, "landmarks"), repr=array_repr)  # type: ignore[misc]
    #: ``W^{+1/2}``, shape (r, r), with ``W`` the base kernel on the landmarks.
    projection: np.ndarray = attrs.field(converter=frozen_array(2, "projection"), repr=array_repr)  # type: ignore[misc]
    #: The base kernel: ``base`` built with ``base_params``, as :meth:`fit` gives it or a model's
    #: loading builds it from its registry; where not given, built from the installed plugins.
    #: Not saved (``base`` and ``base_params`` are).
    base_kernel: KernelFunction = attrs.field(
        default=attrs.Factory(lambda self: build_base(self.base, self.base_params, resolve_registry(None)),
                              takes_self=True),
        eq=False, repr=False, metadata={REBUILT: _rebuilt_base})

    def __attrs_post_init__(self) -> None:
        if not self.base_kernel.psd:
            raise ValidationError(f"the Nystrom method needs a PSD base kernel; {self.base!r} is not PSD")
        r = self.landmarks.shape[0]
        if r == 0 or self.projection.shape != (r, r):
            raise ValidationError(f"the projection must have shape (r, r) for r = {r} landmarks, "
                                  f"got {self.projection.shape}")

    @property
    def rank(self) -> int:
        """The number of landmarks (and of features)."""
        return int(self.landmarks.shape[0])

    @property
    def n_inputs(self) -> int:
        return int(self.landmarks.shape[1])

    def _map(self, X: np.ndarray) -> np.ndarray:
        return self.base_kernel(X, self.landmarks) @ self.projection

    @classmethod
    def fit(
        cls,
        base: KernelFunction,
        X: np.ndarray,
        rank: int,
        *,
        sampling: str = "uniform",
        seed: int = 0,
        oversample: float = 2.0,
        regularization: float | None = None,
        tol: float = 1e-12,
        registry: Registry | None = None,
    ) -> Nystrom:
        """The Nystrom kernel of ``base`` on ``rank`` landmarks among the rows of ``X``.

        ``X`` holds the features the kernel will read (a spec's columns
        only, standardised as the estimator will see them).  ``sampling``:
        ``"uniform"`` or ``"leverage"`` (ridge leverage scores estimated from
        a uniform oversample of ``ceil(oversample * rank)`` rows, at least
        ``rank + 1``, at most N; ``regularization`` is ``lam``, None for the
        ``lam`` with an estimated effective dimension of ``rank / 2``).
        Eigenvalues of ``W`` below ``tol`` times the largest are dropped.
        Deterministic given ``seed``.  ``base`` must be the kernel registered under its name in
        ``registry`` (None: the installed plugins), which rebuilds it from a saved model.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0 or not np.isfinite(X).all():
            raise ValidationError(f"X must be a finite non-empty 2-D feature matrix, got shape {X.shape}")
        N = X.shape[0]
        if isinstance(rank, bool) or int(rank) != rank or not 1 <= rank <= N:
            raise ValidationError(f"rank must be an integer in [1, {N}] (the landmarks are rows of X), "
                                  f"got {rank!r}")
        rank = int(rank)
        if sampling not in SAMPLINGS:
            raise ValidationError(f"sampling must be one of {', '.join(SAMPLINGS)}, got {sampling!r}")
        if not oversample >= 1:
            raise ValidationError(f"oversample must be >= 1, got {oversample!r}")
        if regularization is not None and not regularization > 0:
            raise ValidationError(f"regularization must be > 0 (or None), got {regularization!r}")
        if not 0 <= tol < 1:
            raise ValidationError(f"tol must be in [0, 1), got {tol!r}")
        base = base.fitted(X)  # a width relative to the data, measured on the rows given
        name, params = describe_kernel(base, resolve_registry(registry))
        if not base.psd:
            raise ValidationError(f"the Nystrom method needs a PSD base kernel; {name!r} is not PSD")
        rng = np.random.default_rng(seed)
        if rank == N:
            index = np.arange(N)
        elif sampling == "uniform":
            index = rng.choice(N, size=rank, replace=False)
        else:
            scores = ridge_leverage_scores(base, X, rank, rng, oversample, regularization)
            probabilities = np.maximum(scores, np.finfo(float).tiny)
            index = rng.choice(N, size=rank, replace=False, p=probabilities / probabilities.sum())
        landmarks = X[np.sort(index)]
        mu, U = np.linalg.eigh(base(landmarks, landmarks))
        keep = mu > tol * mu[-1]
        if mu[-1] <= 0 or not keep.any():
            raise ValidationError(f"the base kernel {name!r} is zero on the landmarks: nothing to fit")
        projection = (U[:, keep] / np.sqrt(mu[keep])) @ U[:, keep].T
        return cls(base=name, base_params=params, landmarks=landmarks,
                   projection=(projection + projection.T) / 2, base_kernel=base)


def ridge_leverage_scores(
    kernel: KernelFunction,
    X: np.ndarray,
    rank: int,
    rng: np.random.Generator,
    oversample: float,
    regularization: float | None,
) -> np.ndarray:
    """Approximate ridge leverage scores of the rows of ``X`` from a uniform oversample, in [0, 1].

    ``l~_i(lam) = min(1, (k(x_i, x_i) - k_S(x_i)' (K_SS + lam (s/N) I)^{-1} k_S(x_i)) / lam)``
    (Musco & Musco 2017), exact (``[K (K + lam I)^{-1}]_ii``) when ``s = N``;
    ``lam`` is ``regularization``, or where None the ``lam`` at which
    ``sum_i l~_i(lam) = rank / 2`` (bisection on ``log lam``).  Cost: ``N s``
    kernel entries, one ``s x s`` eigendecomposition, ``O(N s)`` per bisection step.
    """
    N = X.shape[0]
    s = min(N, max(rank + 1, math.ceil(oversample * rank)))
    sample = np.sort(rng.choice(N, size=s, replace=False))
    C = kernel(X, X[sample])  # (N, s)
    mu, U = np.linalg.eigh((C[sample] + C[sample].T) / 2)
    mu = np.maximum(mu, 0.0)
    diagonal = kernel.diagonal(X)
    if mu[-1] <= 0:
        raise ValidationError(f"the base kernel {kernel.name!r} is zero on the oversample: no scores")
    explained = (C @ U) ** 2  # k_S(x_i)' (K_SS + t I)^{-1} k_S(x_i) = explained[i] @ (1 / (mu + t))

    def scores(lam: float) -> np.ndarray:
        return np.clip((diagonal - explained @ (1.0 / (mu + lam * s / N))) / lam, 0.0, 1.0)

    if regularization is not None:
        return scores(float(regularization))
    # sum_i l~_i(lam) <= trace(K) / lam: at most rank / 2 at hi; lo is machine precision on K's scale.
    lo, hi = np.finfo(float).eps * mu[-1] * N / s, 2.0 * diagonal.sum() / rank
    for _ in range(BISECTION_STEPS):
        middle = math.sqrt(lo * hi)
        lo, hi = (middle, hi) if scores(middle).sum() > rank / 2 else (lo, middle)
    return scores(hi)
