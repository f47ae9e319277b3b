"""Solvers no seed paper has, assembled only from registered parts (no solver code of their own).

* ``mlmkl-max-md``: ``mlmkl_max`` by deterministic entropic mirror descent over the shared kernel
  weights with mirrorVSKL's Theorem 3.1 step, every label's SVM per step (``label-svms``),
  stopping on the certified gap;
* ``mlmkl-max-averaged-md``: the same steps with ML-MKL-SA's averaged iterates
  (``iterate-averaging``), the classical remedy for sub-gradient oscillation;
* ``mlmkl-simplemkl``: ``mlmkl_sum`` by SimpleMKL's ``reduced-gradient``, every label's SVM per query.

Verified against the ``cvxpy`` optimum in ``tests/plugins/variants/test_variants.py``; see docs/compose.md.
"""

from __future__ import annotations

from kernelfuse.assembly.outer_loop import OuterLoop
from kernelfuse.assembly.recipe import Recipe

_SVM = ("svm_solver", "active-set")
_WORST_LABEL_STEPS = {"step_rule": "theorem-3.1", "max_iter": 20_000, "tol": 1e-4}

VARIANTS = (
    Recipe(
        "mlmkl-max-md", OuterLoop,
        parts={"optimizer": ("optimizer", "mirror-descent"),
               "optimizer.mirror_map": ("mirror_map", "entropic"),
               "oracle": ("oracle", "label-svms"), "oracle.svm_solver": _SVM},
        families=frozenset({"mlmkl_max"}), defaults=_WORST_LABEL_STEPS,
        description="variant: the worst label (mlmkl_max) by entropic mirror descent with "
                    "Theorem 3.1 steps, every label's SVM per step",
    ),
    Recipe(
        "mlmkl-max-averaged-md", OuterLoop,
        parts={"optimizer": ("optimizer", "iterate-averaging"),
               "optimizer.inner": ("optimizer", "mirror-descent"),
               "optimizer.inner.mirror_map": ("mirror_map", "entropic"),
               "oracle": ("oracle", "label-svms"), "oracle.svm_solver": _SVM},
        families=frozenset({"mlmkl_max"}), defaults=_WORST_LABEL_STEPS,
        description="variant: mlmkl-max-md with averaged iterates (ML-MKL-SA's averaging part)",
    ),
    Recipe(
        "mlmkl-simplemkl", OuterLoop,
        parts={"optimizer": ("optimizer", "reduced-gradient"),
               "oracle": ("oracle", "label-svms"), "oracle.svm_solver": _SVM},
        families=frozenset({"mlmkl_sum"}),
        description="variant: mlmkl_sum by SimpleMKL's reduced gradient over the shared weights",
    ),
)
