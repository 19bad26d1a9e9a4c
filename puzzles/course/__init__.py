"""What the course says: the puzzle record, the catalog, the reference kernels and starters, the
likely slips, the notebooks and the primer.
"""
