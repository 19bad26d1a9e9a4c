"""Running a learner's kernel where it cannot hurt: the interpreter with every access recorded and
guarded, child processes and time limits, the GPU worker, and the compile check for real GPUs.
"""
