"""What a learner calls from a notebook besides `test()`: debugging helpers, the sandbox for a cell's
own launches, puzzle 20's sweep, and the workspace `my-notebooks/`.
"""
