"""A registry passed to ``kernelfuse.solve``, an estimator or ``load_model`` reaches every look-up.

The private registry is a copy of the installed one plus parts under names only it has: a
recipe, a loss and a kernel.  The installed registry must not have them, so each call below
fails without the private registry.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from sklearn.base import clone

import kernelfuse
from helpers import REPO
from kernelfuse import MKLClassifier, UnknownNameError, ValidationError
from kernelfuse.frontends.cv_estimators import MKLClassifierCV
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.frontends.persistence import load_model
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.parts.registry import Registry, get_registry
from kernelfuse.plugins.kernels.linear import Linear
from kernelfuse.plugins.kernels.nystrom import Nystrom

RECIPE, LOSS, KERNEL = "private-spicymkl", "private-logistic", "private-linear"
#: The call sites of get_registry() allowed in core/ and plugins/ outside core/parts/registry.py:
#: the CLI's ``plugins`` command, which lists the installed plugins.  Every function taking a
#: ``registry=`` resolves None through :func:`resolve_registry`.
MOST_CALL_SITES = 1


@attrs.frozen
class PrivateLinear(Linear):
    """The linear kernel under a name only the private registry knows."""

    name = KERNEL


@pytest.fixture(scope="module")
def private() -> Registry:
    registry = Registry()
    for entry in get_registry():
        registry.add(entry.kind, entry.name, entry.factory, description=entry.description)
    registry.add("recipe", RECIPE, attrs.evolve(get_registry().get("recipe", "spicymkl").factory, name=RECIPE))
    registry.add("loss", LOSS, get_registry().get("loss", "logistic").factory)
    registry.add("kernel", KERNEL, PrivateLinear)
    return registry


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    return X, np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)


def test_the_private_parts_are_not_installed(private):
    installed = get_registry()
    assert RECIPE not in installed.names("recipe") and RECIPE in private.names("recipe")
    assert LOSS not in installed.names("loss") and KERNEL not in installed.names("kernel")


def test_solve_finds_the_private_recipe_and_loss(private, data):
    X, y = data
    K = np.stack([np.outer(X[:, j], X[:, j]) for j in range(2)])
    result = kernelfuse.solve(K, y, solver=RECIPE, family="l1_mkl", loss=LOSS, registry=private, C=0.1)
    assert result.status == "converged" and result.solver == RECIPE
    with pytest.raises(UnknownNameError, match=RECIPE):
        kernelfuse.solve(K, y, solver=RECIPE, family="l1_mkl", C=0.1)
    with pytest.raises(UnknownNameError, match=LOSS):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=LOSS, C=0.1)


def test_an_estimator_its_cross_validation_and_its_model_file_use_the_private_registry(private, data, tmp_path):
    X, y = data
    kernels = [KernelSpec(Nystrom.fit(PrivateLinear(), X, 2, registry=private)), KernelSpec(PrivateLinear())]
    model = MKLClassifier(kernels=kernels, solver=RECIPE, loss=LOSS, registry=private).fit(X, y)
    assert model.get_params()["registry"] is private and model.result_.solver == RECIPE
    model.save(tmp_path / "model.npz")
    loaded = load_model(tmp_path / "model.npz", registry=private)
    assert loaded.registry is private and type(loaded.kernels_[0].function.base_kernel) is PrivateLinear
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    with pytest.raises(UnknownNameError, match=KERNEL):
        load_model(tmp_path / "model.npz")
    with pytest.raises(UnknownNameError, match=RECIPE):
        MKLClassifier(kernels=kernels, solver=RECIPE).fit(X, y)

    grid = kernel_grid(2, widths=(1.0,), degrees=(1,), registry=private)[:2]
    search = MKLClassifierCV(kernels=grid, solver=RECIPE, loss=LOSS, Cs=2, cv=2, registry=private).fit(X, y)
    assert search.result_.solver == RECIPE


def test_a_clone_of_an_estimator_keeps_its_registry(private):
    """scikit-learn's clone deep-copies parameters; a registry copies to itself."""
    assert clone(MKLClassifier(registry=private)).registry is private


def test_an_estimator_refuses_a_registry_of_another_type(data):
    with pytest.raises(ValidationError, match="registry must be a kernelfuse Registry or None"):
        MKLClassifier(registry="installed").fit(*data)


def test_few_call_sites_look_the_installed_registry_up():
    """Everything else receives the registry it looks parts up in (none of the sites is inside
    a function that a solve or an estimator calls with a registry)."""
    sources = [path for folder in ("core", "plugins") for path in sorted((REPO / folder).rglob("*.py"))
               if path != REPO / "core" / "parts" / "registry.py"]
    sites = {str(path.relative_to(REPO)): path.read_text().count("get_registry()") for path in sources}
    sites = {path: count for path, count in sites.items() if count}
    assert sum(sites.values()) <= MOST_CALL_SITES, sites
