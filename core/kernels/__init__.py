"""Kernel stacks: kernel functions and specs, normalising, storing, rows on demand,
low-rank factors, devices, and the products every solver reads a stack through.

Layer 2 of core: imports the runtime layer and below.
"""
