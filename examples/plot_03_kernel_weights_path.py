"""
# Kernel weights across a grid of C

How sparse is the selection, and which kernels enter first? SpicyMKL on
`l1_mkl` (logistic loss, the estimators' default) over a grid of `C`, on
one precomputed stack: the block-l1 penalty `C sum_m ||f_m||` keeps fewer
kernels as `C` grows. Each solve is certified to a relative gap of `1e-6`.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

import kernelfuse
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.kernels.functions import compute_kernels

data = load_breast_cancer()
X = StandardScaler().fit_transform(data.data[:200, :10])  # the ten "mean" descriptors
y = np.where(data.target[:200] == 1, 1.0, -1.0)
specs = kernel_grid(10, widths=(1.0, 5.0), degrees=(), feature_names=list(data.feature_names[:10]))
K = compute_kernels(specs, X)
K /= np.trace(K, axis1=1, axis2=2)[:, None, None]  # unit trace

grid = np.geomspace(0.002, 2.0, 13)
weights = []
for C in grid:
    result = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=C,
                              tol=1e-6, check_psd=False)
    assert result.converged
    weights.append(result.kernel_weights)
    print(f"C = {C:.3f}: {np.sum(result.kernel_weights > 1e-3):2d} kernels, "
          f"objective {result.objective:.4f}, gap {result.gap:.1e}")
weights = np.array(weights)

# %%
# The weight of every kernel that is ever above 1e-3, against C.
fig, ax = plt.subplots(figsize=(7, 4))
for m in np.flatnonzero(weights.max(axis=0) > 1e-3):
    ax.plot(grid, weights[:, m], marker=".", label=specs[m].label)
ax.set_xscale("log")
ax.set_xlabel("C")
ax.set_ylabel("kernel weight")
ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
fig.tight_layout()
plt.show()
