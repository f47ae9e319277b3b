"""ML-MKL-SA (Bucak, Jin and Jain, "Multi-label Multiple Kernel Learning by Stochastic Approximation"), as parts.

* ``label_svms``: every label's SVM on the shared kernel ``K(p)``, the full-gradient oracle of
  section 2, kind ``oracle`` (``label-svms``);
* ``label_sampler``: the stochastic class sampler (eqs. 8-9, 11), kind ``oracle`` (``label-sampler``);
* ``saddle_mirror_descent``: the updates of the kernel and label weights (eq. 7), kind ``optimizer``;
* ``iterate_averaging``: the averaged iterates (eq. 10), kind ``optimizer``.

With the shared parts (``mirror_map`` ``entropic``, ``svm_solver`` ``active-set``, ``stopping``
``estimate-change``) they make the solvers ``mlmkl-sa`` (family ``mlmkl_max``) and the baseline
``mlmkl-sum`` (family ``mlmkl_sum``: every label's SVM per query, projected Newton steps with
mirror-vskl's ``local-quadratic`` map, or entropic mirror descent with ``mirror_map="entropic"``).
"""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    from kernelfuse.assembly.outer_loop import OuterLoop
    from kernelfuse.assembly.recipe import Recipe
    from kernelfuse.plugins.mlmkl.iterate_averaging import IterateAveraging
    from kernelfuse.plugins.mlmkl.label_sampler import LabelSampler
    from kernelfuse.plugins.mlmkl.label_svms import LabelSVMs
    from kernelfuse.plugins.mlmkl.saddle_mirror_descent import SaddleMirrorDescent

    registry.add("oracle", LabelSVMs.name, LabelSVMs,
                 description="ML-MKL: every label's SVM on the shared kernel K(p), warm-started")
    registry.add("oracle", LabelSampler.name, LabelSampler,
                 description="ML-MKL-SA: one label drawn from the smoothed label weights, "
                             "unbiased gradient estimates (eqs. 8-9)")
    registry.add("optimizer", SaddleMirrorDescent.name, SaddleMirrorDescent,
                 description="ML-MKL-SA: multiplicative updates, descent in the kernel weights, "
                             "ascent in the label weights (eq. 7)")
    registry.add("optimizer", IterateAveraging.name, IterateAveraging,
                 description="the running mean of an optimiser's iterates as its estimate (eq. 10)")
    svm = ("svm_solver", "active-set")
    for recipe in (
        Recipe("mlmkl-sa", OuterLoop,
               parts={"optimizer": ("optimizer", "iterate-averaging"),
                      "optimizer.inner": ("optimizer", "saddle-mirror-descent"),
                      "optimizer.inner.mirror_map": ("mirror_map", "entropic"),
                      "oracle": ("oracle", "label-sampler"),
                      "oracle.label_svms": ("oracle", "label-svms"),
                      "oracle.label_svms.svm_solver": svm},
               families=frozenset({"mlmkl_max"}),
               defaults={"stop": "gap", "tol": 1e-4, "max_iter": 100_000,
                         "optimizer.decay": 3.0},
               description="ML-MKL-SA: one sampled label's SVM per iteration, multiplicative "
                           "updates of kernel and label weights, averaged iterates"),
        Recipe("mlmkl-sum", OuterLoop,
               parts={"optimizer": ("optimizer", "mirror-descent"),
                      "optimizer.mirror_map": ("mirror_map", "local-quadratic"),
                      "oracle": ("oracle", "label-svms"),
                      "oracle.svm_solver": svm},
               families=frozenset({"mlmkl_sum"}),
               description="ML-MKL-Sum: projected Newton steps on the shared kernel weights "
                           "(mirror_map='entropic': entropic mirror descent), every label's SVM per step"),
    ):
        registry.add("recipe", recipe.name, recipe, description=recipe.description)
