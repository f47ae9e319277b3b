"""PWMK (Tanabe et al. 2008): kernel weights from each kernel's cross-validated accuracy.

Tanabe, Ho, Nguyen and Kawasaki, "Simple but effective methods for combining kernels in
computational biology", IEEE RIVF 2008, section III: each kernel alone is scored by the
accuracy ``acc_m`` of an SVM (the registered SVM solver part, the problem's ``C``) in
``cv``-fold stratified cross-validation (scikit-learn's ``StratifiedKFold(cv)``, folds in the
data's order, no shuffling: deterministic), and

    d_m = (acc_m - delta min_k acc_k) / sum_k (acc_k - delta min_j acc_j),   0 <= delta <= 1,

``delta = 0`` weighting by the accuracies themselves, ``delta = 1`` dropping the worst kernel.
MKLpy 0.6's ``PWMK(delta=0, cv=3)`` computes the same weights with libsvm
(``SVC(C=1000)`` by default: pass the same ``C``).  A test example scored exactly 0 counts as
class ``-1``.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL, simplex_weights
from kernelfuse.errors import ValidationError
from kernelfuse.parts.svm_solver import SVMSolver
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import Domain, positive_count

#: PWMK's delta, a fraction of the worst accuracy subtracted from every one.
unit_interval = Domain("in [0, 1]", lambda v: 0 <= v <= 1)


def cross_validated_accuracies(K: np.ndarray, y: np.ndarray, C: float, cv: int,
                               svm_solver: SVMSolver) -> np.ndarray:
    """The mean accuracy of each kernel's SVM over ``cv`` stratified folds (M,); a training fold
    holding one class predicts that class."""
    from sklearn.model_selection import StratifiedKFold

    largest = int(max(np.sum(y > 0), np.sum(y < 0)))
    if cv > largest:
        raise ValidationError(f"cv={cv} folds need at least {cv} examples of one class; the larger "
                              f"class has {largest}: lower cv")
    folds = list(StratifiedKFold(n_splits=cv).split(np.zeros(y.size), y))
    accuracy = np.zeros(K.shape[0])
    for m, Km in enumerate(K):
        for train, test in folds:
            if np.ptp(y[train]) == 0:
                predicted = np.full(test.size, y[train][0])
            else:
                solution = svm_solver.solve(np.ascontiguousarray(Km[np.ix_(train, train)]), y[train], C)
                scores = Km[np.ix_(test, train)] @ (solution.alpha * y[train]) + solution.intercept
                predicted = np.where(scores > 0, 1.0, -1.0)
            accuracy[m] += np.mean(predicted == y[test]) / cv
    return accuracy


@attrs.define
class PWMK(TwoStageMKL):
    """Weights from each kernel's cross-validated SVM accuracy (Tanabe et al. 2008), then one SVM."""

    name: ClassVar[str] = "pwmk"
    #: The fraction of the worst kernel's accuracy subtracted from every kernel's.
    delta: float = unit_interval.field(0.0)
    #: Folds of the stratified cross-validation.
    cv: int = positive_count.field(3)

    def weights(self, problem: Problem) -> KernelWeights:
        accuracy = cross_validated_accuracies(problem.K, problem.y, problem.params["C"], self.cv, self.svm_solver)
        work = {"svm_calls": float(self.cv * problem.K.shape[0])}
        return KernelWeights(simplex_weights(accuracy - self.delta * accuracy.min()), work)
