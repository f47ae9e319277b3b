"""The conformance kit (kernelfuse.testing) on every built-in part it covers, and on broken parts;
and every registered solver, built-in or from a plugin, against the cvxpy reference's certified
interval on each family both solve (a newly registered solver is checked without being listed)."""

from __future__ import annotations

import contextlib
import functools
import io
import warnings

import numpy as np
import pytest

import kernelfuse
from kernelfuse import all_families, get_registry
from kernelfuse.assembly.result import roundoff
from kernelfuse.problem import objectives
from kernelfuse.testing import (
    assert_within_certified,
    check_loss,
    check_mirror_map,
    check_prox,
    check_regularizer,
    check_solver,
    small_problem,
)

#: The capabilities each built-in loss has (a plugin's loss is checked on those it has).
BUILTIN_LOSS_CAPABILITIES = {
    "hinge": {"derivative", "conjugate", "cvxpy_sum", "conjugate_prox"},
    "squared-hinge": {"derivative", "conjugate", "cvxpy_sum", "conjugate_prox"},
    "eps-insensitive": {"derivative", "conjugate", "cvxpy_sum", "conjugate_prox"},
    "logistic": {"derivative", "conjugate", "cvxpy_sum"},
    "squared": {"derivative", "conjugate", "cvxpy_sum"},
    "crammer-singer": {"derivative"},
}


@pytest.mark.parametrize("name", get_registry().names("loss"))
def test_every_registered_loss_conforms(name):
    checked = check_loss(get_registry().create("loss", name))
    assert {"value"} | BUILTIN_LOSS_CAPABILITIES.get(name, set()) <= set(checked)


def test_a_wrong_derivative_or_conjugate_is_caught():
    from kernelfuse.plugins.losses.logistic import Logistic

    class WrongSign(Logistic):
        def derivative(self, y, f):
            return -super().derivative(y, f)

    class WrongConjugate(Logistic):
        def conjugate(self, y, rho):
            return super().conjugate(y, rho) - 0.1

    with pytest.raises(AssertionError, match="not a sub-gradient"):
        check_loss(WrongSign())
    with pytest.raises(AssertionError, match="Fenchel-Young"):
        check_loss(WrongConjugate())


@pytest.mark.parametrize("p, q, r", [(1.0, 1.0, 1.0), (2.0, 2.0, 1.0), (2.0, 1.0, 2.0), (1.0, 2.0, 2.0)])
def test_mixed_norm_prox_conforms(p, q, r):
    prox = get_registry().create("prox", "mixed-norm", lam=0.7, p=p, q=q, r=r)
    assert check_prox(prox) == ["moreau", "non-expansive", "optimality", "fenchel-young"]


def test_block_soft_threshold_conforms_and_a_wrong_prox_is_caught():
    prox = get_registry().create("prox", "block-soft-threshold", C=0.7, C2=0.2)

    def value(x):
        return prox.regularizer.value(np.linalg.norm(x, axis=-1))

    assert "optimality" in check_prox(prox, value=value)

    base = get_registry().create("prox", "block-soft-threshold", C=0.7)

    class Lazy(type(prox)):
        def prox(self, x, step):  # forgets the elastic-net shrink
            return base.prox(x, step)

    with pytest.raises(AssertionError, match="not the minimiser|Moreau"):
        check_prox(Lazy(C=0.7, C2=0.2), value=value)


def _regularizers() -> list[tuple[str, kernelfuse.Regularizer]]:
    """Each family's regulariser (built-in or registered) at its default parameters and at
    parameters drawn from their ranges (seeded), on 5 kernels in 2 groups."""
    rng, found = np.random.default_rng(0), []
    groups = np.array([0, 0, 1, 1, 1])
    for name, family in all_families().items():
        if family.regularizer is None or family.objective is not objectives.norm_penalised:
            continue  # the multi-label families (no regulariser), mikl's coefficients (check_prox)
        for draw in range(3):
            params = {p.name: p.default for p in family.params}
            if draw:  # positive parameters on a log scale, exponents within their domain
                for p in family.params:
                    if p.name == "C2" and draw == 2:
                        continue  # the second draw without an elastic term
                    candidates = [p.default * 10 ** rng.uniform(-1, 1), 1.0, 1.25, 1.5, 2.0, 3.0, np.inf]
                    params[p.name] = next(v for v in rng.permutation(np.array(candidates))
                                          if p.domain.accepts(float(v)))
            found.append((f"{name}{params}", family.regularizer(params, groups)))
    return found


@pytest.mark.parametrize("label, regularizer", _regularizers(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_family_regularizer_conforms(label, regularizer):
    """Every family's regulariser, a plugin's included: Fenchel-Young, the dual norm, the cvxpy form,
    and for penalties separable in the kernel norms the radial prox, slope and dual radius."""
    checked = check_regularizer(regularizer, seed=len(label))
    assert checked[:3] == ["fenchel-young", "dual-norm", "expression"]
    assert ("radial-prox" in checked) == regularizer.separable


def test_a_wrong_radial_prox_is_caught():
    from kernelfuse.problem.regularizers import BlockL1

    class Unscaled(BlockL1):
        def radial_prox(self, norms, step):  # the threshold forgets the step
            return np.maximum(norms - self.weight, 0.0), (norms > self.weight).astype(float)

    with pytest.raises(AssertionError, match="radial prox"):
        check_regularizer(Unscaled(weight=0.5))


@pytest.mark.parametrize("name", get_registry().names("prox"))
def test_every_registered_prox_conforms_at_its_defaults(name):
    """A prox operator a plugin registers is checked without being listed (the Moreau identity and
    non-expansiveness always; optimality and Fenchel-Young where it gives its value and conjugate)."""
    checked = check_prox(get_registry().create("prox", name), shape=(5, 3))
    assert checked[:2] == ["moreau", "non-expansive"]


def test_mirror_maps_conform():
    rng = np.random.default_rng(0)
    groups = np.array([0, 0, 1, 1, 1])
    points = []
    for _ in range(4):
        x = rng.uniform(0.05, 1.0, size=5)
        points.append(x / np.bincount(groups, weights=x)[groups])
    assert check_mirror_map(get_registry().create("mirror_map", "entropic"), points, groups) == [
        "inverse", "divergence"]
    blocks = [rng.normal(size=(4, 3)) for _ in range(4)]  # OBSCURE's map: every row a block
    for p in (1.2, 1.5, 2.0):
        group_norm = get_registry().create("mirror_map", "group-norm", p=p)
        assert check_mirror_map(group_norm, blocks, np.arange(4)) == ["inverse", "divergence"]


@pytest.mark.parametrize("solver, family, params", [
    ("mirror-vskl", "l1_mkl_sq", {"C": 1.0}),
    ("simplemkl", "l1_mkl_sq", {"C": 1.0}),
    ("mirror-vskl", "vskl", {"C": 1.0, "q": 2.0}),
    ("spicymkl", "l1_mkl", {"C": 0.5, "loss": "logistic", "tol": 1e-7}),
    ("mikl", "mikl", {"lam": 1.0, "p": 2.0, "q": 1.0, "r": 2.0, "tol": 1e-9}),
    ("mlmkl-sum", "mlmkl_sum", {"C": 1.0}),
])
def test_builtin_solvers_reach_the_cvxpy_optimum(solver, family, params):
    differences = check_solver(solver, family, seeds=(0, 1), **params)
    assert len(differences) == 2 and max(differences) <= 1e-4


def test_a_solver_that_stops_early_is_caught():
    # One entropic step (a Newton step, the default, already lands within tolerance).
    with pytest.raises(AssertionError, match="above the cvxpy optimum"):
        check_solver("mlmkl-sum", "mlmkl_sum", seeds=(0,), C=1.0, max_iter=1, mirror_map="entropic")


def _families(solver: str) -> frozenset[str]:
    """The families, built-in or registered by a plugin, that ``solver`` (built at its recipe's
    defaults) solves (:meth:`~kernelfuse.Solver.solves`)."""
    built = get_registry().get("recipe", solver).factory.build(get_registry())
    return frozenset(name for name, family in all_families().items() if built.solves(family))


#: Every registered solver with each family it shares with the reference (contrib's solvers and
#: families included).
REGISTERED = [(solver, family) for solver in get_registry().names("recipe") if solver != "cvxpy"
              for family in sorted(_families(solver) & _families("cvxpy"))]
#: Seconds a solver may take at its defaults (an honest ``time_limit`` still certifies its bounds).
TIME_LIMIT = 3.0


@functools.cache
def _problem_and_reference(family: str) -> tuple[tuple, kernelfuse.Result]:
    K, y, extra = small_problem(family, seed=5, n=20, n_kernels=3)
    with contextlib.redirect_stdout(io.StringIO()):
        reference = kernelfuse.solve(K, y, solver="cvxpy", family=family, **extra)
    return (K, y, extra), reference


@pytest.mark.parametrize("solver, family", REGISTERED)
def test_every_registered_solver_is_within_the_cvxpy_certified_interval(solver, family):
    """At its defaults: its objective is not below the reference's certified lower bound, its own
    lower bound not above the certified upper bound, and its objective within its own certified gap
    of the optimum; a ``converged`` gap is within the tolerance the solver promises."""
    (K, y, extra), reference = _problem_and_reference(family)
    recipe = get_registry().get("recipe", solver).factory
    limit = {"time_limit": TIME_LIMIT} if "time_limit" in recipe.parameters() else {}  # one SVM: bounded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kernelfuse.solve(K, y, solver=solver, family=family, **limit, **extra)
    assert_within_certified(result, reference, label=f"{solver} on {family}")
    if result.status == "converged":
        promised = recipe.build(get_registry()).certified_tol()
        assert result.gap <= promised + roundoff(result.objective, len(y)) / max(1.0, abs(result.objective))
