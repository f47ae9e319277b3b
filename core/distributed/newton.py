"""One solve over partitioned features on a Dask cluster, by the registered method for its family.

:class:`DistributedNewton` holds the settings of a solve (``tol``, ``max_iter``, ``time_limit``,
the curvature sample's ``hessian_rows``) and hands it to the first method of the registry's
``distributed`` kind that solves the family: a :class:`~kernelfuse.distributed.passes.Run`
subclass, composed with a :class:`~kernelfuse.distributed.passes.PartitionedOracle` (the passes
over the feature blocks) whose passes it steps over.  The built-in methods
(:mod:`kernelfuse.plugins.distributed_newton`): proximal Newton for ``l1_mkl`` with a smooth loss,
and Newton on the smoothed hinge for binary ``pnorm_mkl``.  A plugin adds a method for its own
family the same way (docs/writing-a-plugin.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import attrs

from kernelfuse.assembly.result import History, Iteration
from kernelfuse.distributed.features import PartitionedFeatures
from kernelfuse.distributed.model import FeatureModel
from kernelfuse.distributed.passes import PartitionedOracle, Run, Waiter
from kernelfuse.errors import ValidationError
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.registry import Registry, resolve_registry
from kernelfuse.problem.families import Family, get_family
from kernelfuse.validation import count, positive, positive_count, seconds


@attrs.define
class DistributedNewton:
    """A solve on partitioned features to a certified relative gap ``tol``, by the registered method
    for the family (``proximal-newton``: ``l1_mkl`` with a smooth loss; ``smoothed-hinge-newton``:
    binary ``pnorm_mkl``).

    ``hessian_rows``: rows of the curvature estimate (of the rows where the loss is curved, as
    many as there are up to this: :meth:`~kernelfuse.distributed.passes.Run.gradient_pass`);
    ``inner_iter``: accelerated proximal gradient steps of a proximal Newton step, on the driver
    (methods that take it).
    """

    tol: float = positive.field(1e-3)
    max_iter: int = count.field(100)
    time_limit: float = seconds.field(math.inf)
    hessian_rows: int = positive_count.field(20_000)
    inner_iter: int = positive_count.field(500)

    def solve(self, data: PartitionedFeatures, family: str | Family = "l1_mkl", *, loss: str | Loss | None = None,
              registry: Registry | None = None, callback: Callable[[Iteration], object] | None = None,
              **params: Any) -> FeatureModel:
        """Minimise ``family`` on the partitioned features; ``params``: the family's (``C``, ``C2``;
        ``lam``, ``p``).  ``l1_mkl`` needs a smooth ``loss``; ``pnorm_mkl`` takes the hinge."""
        registry = resolve_registry(registry)
        fam = get_family(family, registry)
        method = self.method(fam, registry)
        assert fam.regularizer is not None  # a method solves only families with a penalty
        penalty = fam.regularizer(fam.resolve_params(params), None)
        if not isinstance(penalty, method.penalty_type):
            raise ValidationError(f"family {fam.name}: its penalty {penalty.name} is not a "
                                  f"{method.penalty_type.__name__}, which the distributed {method.name} needs")
        settings: dict[str, Any] = {"inner_iter": self.inner_iter} if "inner_iter" in attrs.fields_dict(method) else {}
        oracle = PartitionedOracle(data, Waiter(time.perf_counter() + self.time_limit, data), self.hessian_rows)
        return method(oracle, fam, method.resolve_loss(fam, loss, registry), penalty, History(callback), self.tol,
                      self.max_iter, **settings).run()

    @staticmethod
    def method(family: Family, registry: Registry) -> type[Run]:
        """The first registered ``distributed`` method (by name) that solves ``family``; a
        :class:`ValidationError` naming the methods and what they solve otherwise."""
        methods = [entry for entry in registry if entry.kind == "distributed"]
        if not methods:
            raise ValidationError("no distributed method is registered: the kernelfuse.plugins.distributed_newton "
                                  "plugin (kernelfuse's own) was not loaded")
        for entry in methods:
            if entry.factory.solves(family):
                return entry.factory
        raise ValidationError(f"family {family.name}: no distributed method solves it; the registered ones: "
                              + "; ".join(f"{entry.name} ({entry.description})" for entry in methods))
