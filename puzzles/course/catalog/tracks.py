"""Text that every puzzle of one track shares (the track's puzzles set it on their `Puzzle`)."""

# Puzzles 13-18, int4 packing to GPTQ split-K: under the memory picture's launch-order view.
QUANTIZATION_ORDER_NOTE = ("Quantization track: the launch order shows which programs a GPU runs together, "
                           "and so which packed weight and activation tiles they can share in cache.")

# Puzzles 24-28, the kernels of a training step: the first of them opens with this (after the
# practitioner's puzzles 19-23, which end on torch.compile as the baseline and the compiled code).
TRAINING_TRACK = """\
**The training track (puzzles 24-28).** Puzzles 22 and 23 set the rule: `torch.compile` first, a kernel
of your own where it does better, and the compiled code to see why. A training step is where hand-written
Triton kernels still pay, because its forward pass must leave behind what its backward pass needs, and
its backward pass reduces across a whole batch: a dropout whose mask is never stored (24), a layer norm
over rows wider than any block (25) and its backward, whose weight gradient many programs add up (26), a
cross-entropy over a vocabulary wider than any block (27), and attention's backward (28). Each puzzle's
speed goal is the faster of `torch.compile`'s own kernel for the same spec and the library op a user
would call (`F.layer_norm` and its backward, `F.cross_entropy`, SDPA's backward), at the puzzle's perf size."""

# Under the memory picture's launch-order view, for the training track's puzzles.
TRAINING_ORDER_NOTE = ("Training track: the launch order shows which programs a GPU runs at the same time, and so "
                       "which of them can meet at an output that several programs add into.")
