"""The stochastic class sampler of ML-MKL-SA (Bucak, Jin and Jain, section 3, eqs. 8-9, 11).

For ``mlmkl_max`` as the saddle problem ``min_p max_gamma F(p, gamma) = sum_k gamma_k SVM_k(p)``
(p and gamma on simplices), one query draws one label from the smoothed weights
``gamma' = (1 - delta) gamma + delta / L`` (eq. 8), solves its SVM on ``K(p)`` warm-started,
and returns unbiased estimates of both partial gradients as the saddle operator
``(g_p, -g_gamma)`` (eq. 9).  With ``batch = B > 1`` it draws B labels independently and
averages their estimates (a mini-batch: still unbiased, 1/B of the variance), solving them on
one ``K(p)`` with their forms in one pass, so the two passes a query reads are shared by B
SVMs.  By default the estimates use control variates (every label's
last value and quadratic forms, in the manner of SAGA; our addition): still unbiased and one
SVM per query, without eq. 9's importance-weight variance.  Every query (``certify_every``)
an answer carries a certified model and lower bound from a cutting-plane step over every dual
the run has solved (:mod:`~kernelfuse.plugins.mlmkl.certificate`; our addition), so the gap
rule can stop the run; the other answers carry no model (:meth:`LabelSampler.model` solves
every label).  The gauge ``saddle_gap_estimate`` bounds the gap of the averaged iterates
(eq. 11).  Formulas and measurements: docs/methods/ml-mkl-sa.md.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.assembly.requirements import part_with
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.plugins.mlmkl.certificate import DualTable, certify
from kernelfuse.plugins.mlmkl.label_svms import LabelSVMs
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import Domain, count, flag, positive_count, random_seed


def smoothed(gamma: np.ndarray, delta: float) -> np.ndarray:
    """``(1 - delta) gamma + delta / L`` (eq. 8)."""
    return (1.0 - delta) * gamma + delta / gamma.size


@attrs.define
class _Regret:
    """Running sums of the sampled estimates, for the gap estimate."""

    values: np.ndarray      # sum_t v_hat_t           (L,)
    gradients: np.ndarray   # sum_t g_hat_t           (M,)
    played: float = 0.0     # sum_t gamma_t' v_hat_t - sum_t g_hat_t' p_t
    count: int = 0

    def add(self, p: np.ndarray, gamma: np.ndarray, v_hat: np.ndarray, g_hat: np.ndarray) -> _Regret:
        return _Regret(self.values + v_hat, self.gradients + g_hat,
                       self.played + float(gamma @ v_hat - g_hat @ p), self.count + 1)

    def gap(self) -> float:
        return (float(self.values.max() - self.gradients.min()) - self.played) / self.count


@attrs.define
class _State:
    problem: Problem
    rng: np.random.Generator
    svms: Any  # the label SVMs' own oracle state
    regret: _Regret
    values: np.ndarray  # the last SVM_k seen of every label (0 before it is first solved)
    forms: np.ndarray   # its A[:, k] (M, L)
    table: DualTable    # every label's last duals and every plane solved, for the certificate


@attrs.define
class LabelSampler(Oracle):
    """ML-MKL-SA: one label drawn from the smoothed label weights, unbiased gradient estimates."""

    name = "label-sampler"
    families = frozenset({"mlmkl_max"})
    label_svms: LabelSVMs = attrs.field(validator=part_with("solve", "query", "truncated"))
    #: Exploration: every label is drawn with probability at least delta / L.
    delta: float = Domain("in (0, 1]", lambda v: 0 < v <= 1).field(0.2)
    seed: int | None = random_seed.field(None)
    #: Control variates from every label's last SVM (SAGA-style): still unbiased, far less
    #: variance; False gives the plain estimates of eq. 9.
    control_variates: bool = flag.field(True)
    #: With control variates, fill their table with every label's SVM at the first point (SAGA's start);
    #: False starts it empty (still unbiased), each label entering when first solved: the
    #: first point is far from the optimum, and the certificate solves every label anyway.
    fill: bool = flag.field(False)
    #: Labels drawn per query (independently, duplicates solved once), their estimates averaged.
    batch: int = positive_count.field(1)
    #: Every ``certify_every`` queries (from the first) the answer carries a
    #: certified model and bound: a cutting-plane step over every dual the run has solved
    #: (:mod:`~kernelfuse.plugins.mlmkl.certificate`; a few SVMs there, and every label's at
    #: most once per fifteenfold cut of the gap).  0: no model until the final one (the paper's method).
    certify_every: int = count.field(1)

    def init(self, problem: Problem) -> tuple[np.ndarray, _State]:
        p, svms = self.label_svms.init(problem)
        M, L = problem.n_kernels, problem.n_outputs
        point = np.r_[p, np.full(L, 1.0 / L)]
        regret = _Regret(np.zeros(L), np.zeros(M))
        return point, _State(problem, np.random.default_rng(self.seed), svms, regret,
                             np.zeros(L), np.zeros((M, L)), DualTable.empty(problem))

    def query(self, point: np.ndarray, state: _State) -> tuple[OracleAnswer, _State]:
        M = state.problem.n_kernels
        p, gamma = point[:M], point[M:]
        drawn = smoothed(gamma, self.delta)
        draws = state.rng.choice(gamma.size, size=self.batch, p=drawn / drawn.sum())
        labels, times = np.unique(draws, return_counts=True)
        svms, values, forms, calls, passes = state.svms, state.values, state.forms, labels.size, 0.0
        table = state.table
        if self.control_variates and self.fill and state.regret.count == 0:
            # The table starts complete: every label's SVM at the first point (SAGA's start).
            full, svms = self.label_svms.solve(p, range(gamma.size), svms)
            values, forms, calls, passes = full.values, full.A, calls + gamma.size, full.passes
            table.record(full)
        s, svms = self.label_svms.solve(p, labels.tolist(), svms)
        table.record(s)
        # each drawn label's importance weight, over the batch: E of the sum is one draw's
        weight = times / (self.batch * drawn[labels])
        if self.control_variates:
            # E over the draws of the corrections is (values - table): unbiased, and small
            # once the table is close to the current values.
            v_hat = values.copy()
            v_hat[labels] += (s.values - values[labels]) * weight
            g_p = -0.5 * (forms @ gamma + (s.A - forms[:, labels]) @ (gamma[labels] * weight))
        else:
            v_hat = np.zeros(gamma.size)
            v_hat[labels] = s.values * weight
            g_p = -0.5 * s.A @ (gamma[labels] * weight)
        values, forms = values.copy(), forms.copy()  # every label's last value and forms
        values[labels], forms[:, labels] = s.values, s.A
        regret = state.regret.add(p, gamma, v_hat, g_p)
        counters = {"svm_calls": calls, "kernel_passes": passes + s.passes, "oracle_calls": 1}
        model: dict[str, Any] = {"coef": None, "objective": np.nan}
        if self.certify_every and state.regret.count % self.certify_every == 0:
            certificate, svms = certify(self.label_svms, state.problem, p, table, svms)
            model = {"coef": certificate.coef, "objective": certificate.objective,
                     "kernel_weights": certificate.kernel_weights, "lower_bound": certificate.lower}
            counters["svm_calls"] += certificate.svm_calls
            counters["kernel_passes"] += certificate.kernel_passes
            counters["certificate_svm_calls"] = certificate.svm_calls
            counters["svm_truncated"] = self.label_svms.truncated(svms)
        answer = OracleAnswer(
            value=float(s.values.max()), gradient=np.r_[g_p, -v_hat], **model, counters=counters,
            gauges={"saddle_gap_estimate": regret.gap()},
        )
        return answer, attrs.evolve(state, svms=svms, regret=regret, values=values, forms=forms)

    def model(self, point: np.ndarray, state: _State) -> tuple[OracleAnswer, _State]:
        """Every label's SVM at the kernel weights ``p = point[:M]``: the model, its
        ``max_k SVM_k(p)`` and the best certified lower bound."""
        M = state.problem.n_kernels
        answer, svms = self.label_svms.query(point[:M], state.svms)
        return answer, attrs.evolve(state, svms=svms)
