"""The learner's commands: `grade` (`grade.py`: which files and puzzles a command line names; the loading
and grading are puzzles/submissions/'s) and `doctor`.
"""
