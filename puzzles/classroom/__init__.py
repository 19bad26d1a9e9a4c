"""Grading a class: one sandboxed process per submission, the gradebook, and the command line.
"""
