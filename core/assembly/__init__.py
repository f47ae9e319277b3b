"""Parts made into solvers: recipes, the outer loop, the solver contract and its result,
and :func:`kernelfuse.solve`.

Layer 5 of core: imports the problem layer and below.
"""
