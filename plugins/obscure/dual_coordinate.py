"""OBSCURE's finishing stage: exact coordinate ascent on the ``pnorm_mkl`` dual (a deterministic stage).

The dual of :mod:`kernelfuse.problem.duality` (OBJECTIVES.md family 4),
``D(tau) = (1/N) sum_i s_i - ||v||_{2,q}^2 / (2 lam)``, is kept in the expansion as
``theta = (q / lam) v`` (coefficients ``A = kappa tau``, ``kappa = q / (lam N)``), whose model
``w = grad h*(theta)`` is that dual point's primal point.  One visit of example ``i`` moves
``tau_i`` along the feasible direction :func:`direction` picks and maximises ``D`` there
(:func:`step`), as the dual coordinate descent of linear SVMs (Hsieh et al., ICML 2008) with the
(2,q) norm; along the line each block norm is a quadratic read from the expansion in ``O(C M)``.
An example's violation bounds its share of the gap, so an epoch skips those below a tenth of
the current gap.  The derivation: docs/methods/obscure.md.
"""

from __future__ import annotations

import numpy as np

#: Newton or bisection steps of one line search, at most.
NEWTON_STEPS = 30


def direction(y_i: float | int, f_i: np.ndarray, tau_i: np.ndarray,
              threshold: float = 0.0) -> tuple[np.ndarray, float, float] | None:
    """``(e, lin, upper)``: move ``tau_i`` by ``delta e``, ``0 <= delta <= upper``, the dual's
    linear part gaining ``lin delta / N``; None where no move increases ``D`` by a violation
    above ``threshold`` (the violation bounds the example's share of the gap).

    Binary (``f_i``, ``tau_i`` of shape (1,)): ``a_i = y_i tau_i`` up (``e = y_i``, ``lin = 1``)
    while the margin is below 1, down otherwise.  Crammer-Singer: the mass ``beta_ic`` moves
    from the source with the smallest gradient ``g_c = 1 - f_y + f_c`` (the slack
    ``1 - s_i`` counts as ``g = 0``, at index ``y_i``) with some mass to give, to the sink
    with the largest (the maximal violating pair of SMO)."""
    if f_i.size == 1:
        y, a = float(y_i), float(y_i * tau_i[0])
        slope = 1.0 - y * float(f_i[0])
        if slope > threshold and a < 1.0:
            return np.array([y]), 1.0, 1.0 - a
        if slope < -threshold and a > 0.0:
            return np.array([-y]), -1.0, a
        return None
    y = int(y_i)
    gain = 1.0 - f_i[y] + f_i
    gain[y] = 0.0
    available = np.maximum(-tau_i, 0.0)
    available[y] = 1.0 - tau_i[y]
    sources = np.flatnonzero(available > 0.0)
    if not sources.size:
        return None
    source = int(sources[np.argmin(gain[sources])])
    sink = int(np.argmax(gain))
    if sink == source or gain[sink] - gain[source] <= threshold:
        return None
    e = np.zeros(f_i.size)
    e[source], e[sink] = 1.0, -1.0
    return e, float(source == y) - float(sink == y), float(available[source])


def step(squared: np.ndarray, along: np.ndarray, diagonal: np.ndarray, kappa: float, slope: float,
         upper: float, lam: float, q: float, n_samples: int, lin: float) -> float:
    """``delta`` in ``[0, upper]`` maximising ``D`` along a direction of slope ``D'(0) = slope > 0``.

    Along the line ``||theta_m + kappa delta e phi_m(x_i)||^2 = n_m + 2 kappa delta b_m +
    kappa^2 delta^2 |e|^2 K_m(x_i, x_i)``: ``squared`` the ``n_m = ||theta_m||^2``, ``along``
    the ``b_m = <e, theta_m(x_i)>``, ``diagonal`` the ``|e|^2 K_m(x_i, x_i)``.  ``D'`` decreases
    (``D`` is concave): safeguarded Newton steps on ``D' = 0`` inside a bracket that bisection keeps, at most
    :data:`NEWTON_STEPS`, ending where ``|D'|`` is below ``1e-3`` of ``D'(0)``."""
    r = 0.5 * q
    c = lam / (2.0 * q * q)

    def derivatives(delta: float) -> tuple[float, float]:
        s = np.maximum(squared + delta * (2.0 * kappa * along + kappa * kappa * delta * diagonal), 0.0)
        ds = 2.0 * kappa * (along + kappa * delta * diagonal)
        dds = 2.0 * kappa * kappa * diagonal
        top = float(s.max(initial=0.0))
        if top == 0.0:  # theta = 0 on the line: G = kappa^2 delta^2 ||diagonal||_r, G' = 0 there
            return lin / n_samples, -c * float(np.sum(dds**r)) ** (1.0 / r)
        u = s / top
        S = float(np.sum(u**r))
        positive = u > 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            power = np.where(positive, u ** (r - 1.0), 0.0)
            second = np.where(positive, (r - 1.0) * u ** (r - 2.0) * ds * ds / top, 0.0)
        dS = r * float(power @ ds)  # of sum u^r, times top
        ddS = r * float(np.sum(second + power * dds))
        dG = S ** (1.0 / r - 1.0) * dS / r
        ddG = (1.0 / r) * (1.0 / r - 1.0) * S ** (1.0 / r - 2.0) * dS * dS / top + S ** (1.0 / r - 1.0) * ddS / r
        return lin / n_samples - c * dG, -c * ddG

    low, high, delta = 0.0, upper, 0.0
    first, curvature = slope, derivatives(0.0)[1]
    d1 = slope
    for _ in range(NEWTON_STEPS):
        trial = delta - d1 / curvature if curvature < 0.0 else high
        delta = trial if low < trial < high else (high if trial >= high and high == upper else 0.5 * (low + high))
        d1, curvature = derivatives(delta)
        if d1 > 0.0:
            low = delta
            if delta == upper:
                return delta
        else:
            high = delta
        if abs(d1) <= 1e-3 * first:
            return delta
    return low  # D' > 0 up to low: D increased
