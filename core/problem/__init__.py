"""What is solved: the families of OBJECTIVES.md (parameters, objective, regulariser,
scaling law), a problem instance, and the certificates several methods share.

Layer 4 of core: imports the parts layer and below.
"""
