"""Two-stage MKL: kernel weights by a method's own criterion, then one SVM on the combination.

MKLpy's one-step algorithms, GRAM, MEMO and R-MKL, each a registered solver of family ``l1_mkl_sq`` (kind
``solver``), sharing the assembler :class:`~kernelfuse.TwoStageMKL`
and the SVM solver part (``svm_solver``, ``active-set`` unless named):

* ``fheuristic``: kernel-target alignment (Qiu and Lane 2009), :mod:`.fheuristic`;
* ``cka``: centred-alignment maximisation (Cortes, Mohri and Rostamizadeh 2012), :mod:`.cka`;
* ``pwmk``: cross-validated accuracies (Tanabe et al. 2008), :mod:`.pwmk`;
* ``easymkl``: the class-hull distance of the regularised kernel sum (Aiolli and Donini 2015),
  :mod:`.easymkl`;
* ``gram``: the radius-margin ratio by exponentiated gradient (Lauriola, Polato and Aiolli
  2017), :mod:`.gram`;
* ``memo``: gradient ascent on the squared class-hull distance (Lauriola, Polato and Aiolli
  2018), :mod:`.memo`;
* ``rmkl``: gradient steps on the radius-scaled margin term (Do, Kalousis, Woznica and Hilario
  2009), :mod:`.rmkl`.

MKLpy's ``AverageMKL`` is the built-in ``average`` solver (:mod:`kernelfuse.plugins.average_kernel`).
docs/methods/two-stage.md has the objectives, MKLpy's computations and the comparison.
"""

from __future__ import annotations

from kernelfuse.assembly.recipe import Recipe
from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.two_stage.cka import CenteredAlignment
from kernelfuse.plugins.two_stage.easymkl import EasyMKL
from kernelfuse.plugins.two_stage.fheuristic import FHeuristic
from kernelfuse.plugins.two_stage.gram import GRAM
from kernelfuse.plugins.two_stage.memo import MEMO
from kernelfuse.plugins.two_stage.pwmk import PWMK
from kernelfuse.plugins.two_stage.rmkl import RMKL

SVM = {"svm_solver": ("svm_solver", "active-set")}
RECIPES = (
    Recipe("fheuristic", FHeuristic, parts=SVM,
           description="kernel weights by kernel-target alignment (Qiu and Lane 2009), then one SVM"),
    Recipe("cka", CenteredAlignment, parts=SVM,
           description="kernel weights maximising the centred alignment (Cortes et al. 2012), then one SVM"),
    Recipe("pwmk", PWMK, parts=SVM,
           description="kernel weights from cross-validated accuracies (Tanabe et al. 2008), then one SVM"),
    Recipe("easymkl", EasyMKL, parts=SVM,
           description="kernel weights from the class-hull distance (Aiolli and Donini 2015), then one SVM"),
    Recipe("gram", GRAM, parts=SVM,
           description="kernel weights minimising the radius-margin ratio (Lauriola et al. 2017), then one SVM"),
    Recipe("memo", MEMO, parts=SVM,
           description="kernel weights by gradient ascent on the class-hull distance (Lauriola et al. 2018), "
                       "then one SVM"),
    Recipe("rmkl", RMKL, parts=SVM,
           description="kernel weights by gradient steps on the radius-scaled margin (Do et al. 2009), then one SVM"),
)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for recipe in RECIPES:
        registry.add("recipe", recipe.name, recipe, description=recipe.description)
