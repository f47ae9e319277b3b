"""The contracts a plugin author implements (:class:`Loss`, :class:`Regularizer`,
:class:`ProxOperator`, :class:`MirrorMap`, :class:`Oracle`, :class:`OuterOptimizer`,
:class:`SVMSolver`, :class:`StoppingRule`), the hook specifications and the registry
that finds the parts.

Layer 3 of core: imports the layers below (the problem layer only for type hints).
"""
