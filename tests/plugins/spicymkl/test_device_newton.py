"""SpicyMKL's Newton steps on a device stack stay on the device: at most two host
synchronisations a Newton step (one read back, one array sent), for every loss.

Checked on the CPU with ``array-api-strict`` on its non-default device, whose arrays count
what crosses: a read is a number or a NumPy copy taken from a device array (``float``,
``bool``, ``int``, DLPack), a send is a device array made from host data (``asarray`` of
anything but a device array, or a Python number given to a function that PyTorch's namespace
makes a tensor of first: ``maximum``, ``minimum``, ...).  On a GPU each is a synchronisation of
the host with the device.
The answers are checked against NumPy's certified interval on the same problem.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs
import numpy as np
import pytest

import kernelfuse
from helpers import RecordedCalls, breast_cancer_kernels, record_as_a_graph
from kernelfuse.kernels import array_backend
from kernelfuse.plugins.losses.logistic import Logistic
from kernelfuse.plugins.spicymkl import smoothed_dual_newton
from kernelfuse.plugins.spicymkl.active_kernels import KernelTerms
from kernelfuse.problem.regularizers import BlockL1

xp = pytest.importorskip("array_api_strict")
DEVICE = xp.Device("device1")
LOSSES = ["logistic", "squared", "squared-hinge", "hinge", "eps-insensitive"]
READS = ("__float__", "__int__", "__bool__", "__index__", "__complex__", "__dlpack__", "__array__")
#: The functions to which array-api-compat's PyTorch namespace sends a Python number as a tensor.
TAKE_NUMBERS_AS_TENSORS = ("maximum", "minimum", "atan2", "copysign", "hypot", "logaddexp", "nextafter",
                           "logical_and", "logical_or", "logical_xor", "equal", "not_equal", "greater",
                           "greater_equal", "less", "less_equal")


@attrs.define
class Crossings:
    """What crossed between host and device while a Newton loop ran."""

    reads: int = 0
    sends: int = 0
    #: Newton loops run on a device (each ends on a stopping test), and Newton systems solved there.
    loops: int = 0
    solves: int = 0
    inside: bool = False


@pytest.fixture
def crossings(monkeypatch: pytest.MonkeyPatch) -> Crossings:
    seen = Crossings()
    array = type(xp.asarray(0.0))

    def read(name: str) -> None:
        method = getattr(array, name)

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen.reads += seen.inside
            return method(self, *args, **kwargs)

        monkeypatch.setattr(array, name, counted)

    for name in READS:
        if hasattr(array, name):
            read(name)
    asarray = xp.asarray

    def sent(obj: Any, *args: Any, **kwargs: Any) -> Any:
        seen.sends += seen.inside and not isinstance(obj, array)
        return asarray(obj, *args, **kwargs)

    monkeypatch.setattr(xp, "asarray", sent)

    def number_sent(name: str) -> None:
        function = getattr(xp, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            seen.sends += seen.inside and any(isinstance(a, bool | int | float | complex) for a in args)
            return function(*args, **kwargs)

        monkeypatch.setattr(xp, name, counted)

    for name in TAKE_NUMBERS_AS_TENSORS:
        number_sent(name)
    newton, system = smoothed_dual_newton.SmoothedDualNewton._newton, KernelTerms.newton_system

    def counted_newton(oracle: Any, terms: KernelTerms, *args: Any) -> Any:
        seen.inside, seen.loops = terms.on_device, seen.loops + terms.on_device
        try:
            return newton(oracle, terms, *args)
        finally:
            seen.inside = False

    def counted_system(terms: KernelTerms, *args: Any) -> Any:
        seen.solves += terms.on_device
        return system(terms, *args)

    monkeypatch.setattr(smoothed_dual_newton.SmoothedDualNewton, "_newton", counted_newton)
    monkeypatch.setattr(KernelTerms, "newton_system", counted_system)
    return seen


def _problem(loss: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    K, y = breast_cancer_kernels(n=60, m=12, seed=seed)
    if loss in ("squared", "eps-insensitive"):  # real targets
        y = 0.7 * y + 0.3 * np.random.default_rng(seed).normal(size=y.size)
    return K, y


def _on_numpy_and_device(K: np.ndarray, y: np.ndarray, loss: Any, **params: Any) -> tuple[Any, Any]:
    expected = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, tol=1e-8, **params)
    result = kernelfuse.solve(xp.asarray(K, device=DEVICE), y, solver="spicymkl", family="l1_mkl", loss=loss,
                              tol=1e-8, **params)
    assert expected.status == result.status == "converged" and result.gap <= 1e-8
    # each inside the other's certified interval: the same optimum
    for one, other in ((result, expected), (expected, result)):
        assert other.dual_objective - 1e-12 * abs(other.objective) <= one.objective
    return expected, result


@pytest.mark.parametrize("loss", LOSSES)
def test_a_newton_step_on_a_device_crosses_at_most_twice(loss: str, crossings: Crossings) -> None:
    K, y = _problem(loss, seed=2)
    _on_numpy_and_device(K, y, loss, C=0.3)
    assert crossings.solves > crossings.loops > 0
    # a step: one read and one send (the lazy Hessian's re-read weights); a loop: its last stopping test
    assert crossings.reads + crossings.sends <= 2 * crossings.solves + crossings.loops
    assert crossings.reads <= crossings.solves + crossings.loops


def test_weighted_losses_run_on_the_device(crossings: Crossings) -> None:
    K, y = _problem("hinge", seed=4)
    weight = np.random.default_rng(4).uniform(0.2, 3.0, size=y.size)
    _on_numpy_and_device(K, y, "hinge", C=0.5, sample_weight=weight)
    assert crossings.solves > 0
    assert crossings.reads + crossings.sends <= 2 * crossings.solves + crossings.loops


@pytest.mark.parametrize("loss", LOSSES)
def test_the_line_search_replayed_as_a_graph_gives_numpys_answer(loss: str, monkeypatch: pytest.MonkeyPatch) -> None:
    graphs: list[RecordedCalls] = []
    monkeypatch.setattr(array_backend, "graph_recorder", lambda x: functools.partial(record_as_a_graph, graphs))
    K, y = _problem(loss, seed=6)
    _on_numpy_and_device(K, y, loss, C=0.3)
    assert sum(graph.replays for graph in graphs) > len(graphs) > 0


@attrs.frozen
class NumpyOnlyLogistic(Logistic):
    """A plugin loss whose conjugate computes on NumPy arrays only."""

    array_api = False

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        assert isinstance(rho, np.ndarray) and isinstance(y, np.ndarray)
        return super().conjugate(y, rho)

    def conjugate_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        assert isinstance(rho, np.ndarray)
        return super().conjugate_derivative(y, rho)

    def conjugate_second_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        assert isinstance(rho, np.ndarray)
        return super().conjugate_second_derivative(y, rho)


def test_a_numpy_only_loss_is_called_on_the_host_from_the_device() -> None:
    K, y = _problem("logistic", seed=5)
    _on_numpy_and_device(K, y, NumpyOnlyLogistic(), C=0.4)


@attrs.frozen
class NumpyOnlyBlockL1(BlockL1):
    """A plugin penalty whose radial prox and values compute on NumPy arrays only."""

    array_api = False

    def radial_prox(self, norms: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
        assert isinstance(norms, np.ndarray)
        return super().radial_prox(norms, step)

    def kernel_values(self, norms: np.ndarray) -> np.ndarray:
        assert isinstance(norms, np.ndarray)
        return super().kernel_values(norms)


def test_a_numpy_only_penalty_gives_the_kernel_terms_of_numpy() -> None:
    K, _ = breast_cancer_kernels(n=20, m=6, seed=4)
    rng = np.random.default_rng(1)
    alpha, rho, d = 0.3 * rng.normal(size=(6, 20)), rng.normal(size=20), rng.normal(size=20)
    K_alpha = np.einsum("mij,mj->mi", K, alpha)
    arguments = (np.arange(6), K_alpha, np.einsum("mi,mi->m", alpha, K_alpha), 0.7)
    host = KernelTerms(K, *arguments, BlockL1(weight=1.0), rho, np.einsum("mij,j->mi", K, rho))
    device = KernelTerms(xp.asarray(K, device=DEVICE), *arguments, NumpyOnlyBlockL1(weight=1.0), rho,
                         np.einsum("mij,j->mi", K, rho))
    assert 0 < np.count_nonzero(host.scale) < 6  # some kernels active, some not
    for terms in (host, device):
        step = array_backend.like_stack(d, terms.K)
        terms.move(step, terms.direction(step)[0], 0.5)
    device.read(device.xp.sum(device.rho), None)  # the weights s_m the lazy Hessian reads
    back = array_backend.to_numpy
    assert float(back(device.value())) == pytest.approx(float(host.value()), rel=1e-12)
    np.testing.assert_allclose(back(device.gradient()), host.gradient(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(back(device.hessian()), host.hessian(), rtol=1e-12, atol=1e-14)


def _per_example_methods(loss: Any, y: np.ndarray, rho: np.ndarray) -> dict[str, Any]:
    """The loss's per-example methods it has: its value and derivatives at ``f = 3 rho``, its
    conjugate's at ``rho`` (and the prox at ``rho`` with step 0.7)."""
    values = {}
    for name in ("value", "derivative", "second_derivative"):
        if callable(getattr(loss, name, None)):
            values[name] = getattr(loss, name)(y, 3.0 * rho)
    for name in ("conjugate", "conjugate_derivative", "conjugate_second_derivative"):
        if callable(getattr(loss, name, None)):
            values[name] = getattr(loss, name)(y, rho)
    for name in ("conjugate_prox", "conjugate_prox_derivative"):
        if callable(getattr(loss, name, None)):
            values[name] = getattr(loss, name)(y, rho, 0.7)
    return values


@pytest.mark.parametrize("name", [name for name in kernelfuse.get_registry().names("loss")
                                  if kernelfuse.get_registry().create("loss", name).array_api])
def test_a_loss_that_computes_in_any_namespace_gives_numpys_numbers(name: str) -> None:
    loss = kernelfuse.get_registry().create("loss", name)
    rng = np.random.default_rng(7)
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0) if loss.target == "binary" else rng.normal(size=40)
    rho = rng.uniform(-1.2, 1.2, size=40)  # inside and outside each conjugate's domain
    on = (xp.asarray(y, device=DEVICE), xp.asarray(rho, device=DEVICE))
    for weighted in (False, True):
        if weighted:
            from kernelfuse.parts.loss import WeightedLoss

            weight = rng.uniform(0.5, 2.0, size=40)
            loss, device_loss = WeightedLoss(loss, weight), WeightedLoss(loss, xp.asarray(weight, device=DEVICE))
        else:
            device_loss = loss
        expected, got = _per_example_methods(loss, y, rho), _per_example_methods(device_loss, *on)
        assert expected.keys() == got.keys() and {"value", "conjugate"} <= got.keys()
        for method, value in expected.items():
            np.testing.assert_allclose(array_backend.to_numpy(got[method]), value, rtol=1e-13, atol=1e-15,
                                       err_msg=f"{name}.{method} (weighted: {weighted})")
