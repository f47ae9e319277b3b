"""Write a small MKL problem built from scikit-learn's breast-cancer data.

Usage: ``python examples/breast_cancer_problem.py PROBLEM.npz [N]``

Kernels: Gaussian kernels of widths 0.5, 1, 2 and 5 (times the square root
of the number of features used) on all 30 standardised features and on each
of the three descriptor blocks (mean, standard error, worst), each
normalised to unit trace: M = 16 kernels on the first N = 150 samples of a
fixed shuffle, labels +1 = benign, -1 = malignant.  Groups: one per feature
set.  The result is a PROBLEM.npz for ``kernelfuse solve``.
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

WIDTHS = (0.5, 1.0, 2.0, 5.0)
FEATURE_SETS = {"all": slice(0, 30), "mean": slice(0, 10), "se": slice(10, 20), "worst": slice(20, 30)}


def breast_cancer_problem(n_samples: int = 150, seed: int = 0) -> dict[str, np.ndarray]:
    data = load_breast_cancer()
    order = np.random.default_rng(seed).permutation(data.target.size)[:n_samples]
    X = StandardScaler().fit_transform(data.data)[order]
    y = np.where(data.target[order] == 1, 1.0, -1.0)
    kernels, groups = [], []
    for group, columns in enumerate(FEATURE_SETS.values()):
        features = X[:, columns]
        for width in WIDTHS:
            sigma = width * np.sqrt(features.shape[1])
            K = rbf_kernel(features, gamma=1.0 / (2.0 * sigma**2))
            kernels.append(K / np.trace(K))
            groups.append(group)
    return {"K": np.stack(kernels), "y": y, "groups": np.array(groups)}


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    problem = breast_cancer_problem(int(sys.argv[2]) if len(sys.argv) == 3 else 150)
    from pathlib import Path

    from kernelfuse.runtime.files import atomic_write

    Path(sys.argv[1]).parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(sys.argv[1]) as handle:  # a file object: the name is kept as given
        np.savez(handle, **problem)
    print(f"wrote {sys.argv[1]}: K {problem['K'].shape}, y {problem['y'].shape}")
