"""
# Writing and registering a plugin

A plugin is a module with a `kernelfuse_register(registry)` hook that adds
components by kind and name. Installed packages declare it as an entry
point ([Writing a plugin](../../writing-a-plugin.md)); here the hook is
called on an in-process registry, so nothing is installed. The component is
a Huber loss for robust regression: `check_loss` verifies the methods it
provides (conjugate included) numerically, and the cvxpy reference fits
`l1_mkl` with it by name, on targets with a few gross outliers.
"""

import attrs
import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics.pairwise import rbf_kernel

import kernelfuse
from kernelfuse import hookimpl
from kernelfuse.parts.registry import load_registry
from kernelfuse.testing import check_loss
from kernelfuse.validation import positive


@attrs.frozen
class Huber(kernelfuse.Loss):
    """Huber loss: r^2/2 for |r| <= delta, delta (|r| - delta/2) beyond, r = y - f."""

    name = "my-huber"
    target = "real"
    delta: float = positive.field(1.0)

    def value(self, y, f):
        r = np.abs(y - f)
        return np.where(r <= self.delta, 0.5 * r**2, self.delta * (r - 0.5 * self.delta))

    def derivative(self, y, f):
        return -np.clip(y - f, -self.delta, self.delta)

    def conjugate(self, y, rho):
        """sup_z rho z - huber(y - z) = rho y + rho^2 / 2 on |rho| <= delta."""
        return np.where(np.abs(rho) <= self.delta, rho * y + 0.5 * rho**2, np.inf)

    def cvxpy_sum(self, y, f):
        import cvxpy as cp

        return 0.5 * cp.sum(cp.huber(y - f, self.delta)), []  # cvxpy's huber is twice ours


@hookimpl
def kernelfuse_register(registry):
    registry.add("loss", "my-huber", Huber)


registry = load_registry()  # what is installed
kernelfuse_register(registry=registry)  # plus this plugin
print("checked:", check_loss(Huber(delta=0.5)))

rng = np.random.default_rng(0)
x = np.sort(rng.uniform(-3, 3, 80))[:, None]
y = np.sin(x[:, 0]) + 0.1 * rng.normal(size=80)
y[::16] += 3.0  # five gross outliers
grid = np.linspace(-3, 3, 200)[:, None]
widths = (0.3, 1.0, 3.0)
K = np.stack([rbf_kernel(x, gamma=1 / (2 * w**2)) for w in widths]) / 80
K_grid = np.stack([rbf_kernel(grid, x, gamma=1 / (2 * w**2)) for w in widths]) / 80

fits = {}
for loss in ("squared", "my-huber"):
    options = {"delta": 0.3} if loss == "my-huber" else {}
    result = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss=loss, C=0.05,
                              registry=registry, **options)
    assert result.converged
    fits[loss] = result.decision_function(K_grid)
    print(f"{loss}: objective {result.objective:.5f}, certified gap {result.gap:.1e}, "
          f"kernel weights {np.round(result.kernel_weights, 3)}")

# %%
# The same model with the squared loss and with the plugin's Huber loss:
# the outliers pull the squared fit, hardly the Huber one.
fig, ax = plt.subplots(figsize=(6.5, 3.5))
ax.scatter(x[:, 0], y, s=10, color="black", label="training points")
ax.plot(grid[:, 0], np.sin(grid[:, 0]), color="grey", linestyle=":", label="sin x")
for loss, fit in fits.items():
    ax.plot(grid[:, 0], fit, label=f"l1_mkl, loss {loss}")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
