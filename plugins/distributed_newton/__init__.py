"""One MKL solve over feature blocks on a Dask cluster, as registered methods (kind ``distributed``).

* ``proximal_newton``: proximal Newton (Lee, Sun & Saunders 2014) for ``l1_mkl`` with a smooth
  loss (logistic, squared hinge, squared), certified by the ``loss_conjugate`` dual;
* ``smoothed_hinge_newton``: Newton on the hinge's smoothed form (Nesterov 2005) for binary
  ``pnorm_mkl``, certified by the exact hinge's ``mean_loss`` dual.

Both are :class:`kernelfuse.distributed.passes.Run` subclasses stepping over the passes of a
:class:`~kernelfuse.distributed.passes.PartitionedOracle`, the oracle over partitioned features;
:class:`kernelfuse.distributed.newton.DistributedNewton` picks the method that solves a family.
"""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    from kernelfuse.plugins.distributed_newton.proximal_newton import ProximalNewton
    from kernelfuse.plugins.distributed_newton.smoothed_hinge_newton import SmoothedHingeNewton

    registry.add("distributed", ProximalNewton.name, ProximalNewton,
                 description="proximal Newton over feature blocks: l1_mkl with a smooth loss")
    registry.add("distributed", SmoothedHingeNewton.name, SmoothedHingeNewton,
                 description="Newton on the smoothed hinge over feature blocks: binary pnorm_mkl")
