"""
# Composing a variant by name, checked against cvxpy

A solver is a recipe of registered parts. Naming the parts is enough to
compose a new one: here the worst-label problem `mlmkl_max` solved by
entropic mirror descent on the kernel weights with iterate averaging, the
label SVMs solved exactly ([Composing solvers](../../compose.md)).
`kernelfuse.testing.assert_within_certified` then checks its objective
against the certified interval of the cvxpy reference's optimum
(`kernelfuse.testing.check_solver` does the same over several seeds).
"""

import matplotlib.pyplot as plt

import kernelfuse
from kernelfuse.assembly.composition import compose
from kernelfuse.testing import assert_within_certified, small_problem

parts = {"optimizer": "iterate-averaging", "optimizer.inner": "mirror-descent",
         "optimizer.inner.mirror_map": "entropic", "oracle": "label-svms",
         "oracle.svm_solver": "active-set"}
print(compose(parts).description)

K, Y, _ = small_problem("mlmkl_max", seed=0, n=30, n_kernels=4)  # 4 kernels, 3 labels
mine = kernelfuse.solve(K, Y, solver=parts, family="mlmkl_max", C=1.0,
                        step_rule="theorem-3.1", tol=1e-4, max_iter=20000)
reference = kernelfuse.solve(K, Y, solver="cvxpy", family="mlmkl_max", C=1.0)
print(f"composed: {mine.status} after {mine.n_iter} steps, objective {mine.objective:.6f}, "
      f"certified gap {mine.gap:.1e}")
print(f"cvxpy:    objective {reference.objective:.6f}, gap {reference.gap:.1e}")
assert mine.converged
# Within its own certified gap of the reference's certified interval [L, U]:
above = assert_within_certified(mine, reference)
print(f"(P - U) / max(1, |U|) = {above:.1e}, inside the composed solver's gap {mine.gap:.1e}")

# %%
# The certified gap of the composed solver per step: the objective of the
# averaged weights against the lower bound the label SVMs certify.
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog([row.iteration for row in mine.history], [row.gap for row in mine.history])
ax.axhline(1e-4, color="grey", linestyle=":", label="tol")
ax.set_xlabel("step")
ax.set_ylabel("certified relative gap")
ax.set_title("iterate-averaging + mirror-descent on mlmkl_max")
ax.legend()
fig.tight_layout()
plt.show()
