"""The learner's commands: `grade` (the scoreboard over notebooks or files, and what a graded file may
run while it loads) and `doctor`.
"""
