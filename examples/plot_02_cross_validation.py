"""
# Choosing a solver by cross-validation

The estimators are scikit-learn estimators, so `GridSearchCV` can choose
the solver, its family and its regularisation together: each candidate
below is a (solver, family, C) triple of
[Choosing a solver](../../choosing-a-solver.md), scored by 3-fold
cross-validated accuracy on the same kernels.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelfuse.frontends.estimators import MKLClassifier
from kernelfuse.frontends.kernel_grid import kernel_grid

X, y = load_breast_cancer(return_X_y=True)
X, y = X[:150], y[:150]
model = make_pipeline(StandardScaler(), MKLClassifier(kernels=kernel_grid(30, widths=(1.0, 5.0), degrees=())))
candidates = [
    {"mklclassifier__solver": ["spicymkl"], "mklclassifier__family": ["l1_mkl"],
     "mklclassifier__C": [0.1, 1.0]},
    {"mklclassifier__solver": ["mirror-vskl"], "mklclassifier__family": ["l1_mkl_sq"],
     "mklclassifier__C": [10.0, 100.0]},
    {"mklclassifier__solver": ["average"], "mklclassifier__family": ["l1_mkl_sq"],
     "mklclassifier__C": [10.0]},
]
# The average-kernel SVM is a baseline, not an MKL optimum: its status, `completed`,
# says so without a warning, and its certified gap to the optimum is information.
search = GridSearchCV(model, candidates, cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(X, y)
best = search.best_params_
print("best:", {key.split("__")[1]: value for key, value in best.items()})
print(f"cross-validated accuracy {search.best_score_:.3f}")

# %%
# Every candidate's mean accuracy over the folds, with one standard deviation.
names = [f"{p['mklclassifier__solver']} C={p['mklclassifier__C']:g}" for p in search.cv_results_["params"]]
mean, std = search.cv_results_["mean_test_score"], search.cv_results_["std_test_score"]
fig, ax = plt.subplots(figsize=(7, 3))
ax.barh(names, mean, xerr=std, color=["tab:orange" if s == search.best_score_ else "tab:blue" for s in mean])
ax.set_xlim(min(mean - std) - 0.02, 1.0)
ax.set_xlabel("3-fold cross-validated accuracy")
fig.tight_layout()
plt.show()
