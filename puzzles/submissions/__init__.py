"""A learner's files as a submission: read without running them whole (`grade.py`: the definitions of each
cell, the kernels found by name, each graded by `test()`), what those definitions may run while they load
(`load_rules.py`) and what a kernel's body may name (`kernel_body.py`).

`python -m puzzles grade` and a notebook's `progress()` grade a learner's own files with it, in the
learner's process; a class's worker (puzzles/classroom/worker.py) grades each student's with it,
isolated. The commands themselves (arguments, printing) stay in puzzles/cli/ and puzzles/classroom/.
"""
