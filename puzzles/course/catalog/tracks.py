"""Text that every puzzle of one track shares (the track's puzzles set it on their `Puzzle`)."""

# Puzzles 13-18, int4 packing to GPTQ split-K: under the memory picture's launch-order view.
QUANTIZATION_ORDER_NOTE = ("Quantization track: the launch order shows which programs a GPU runs together, "
                           "and so which packed weight and activation tiles they can share in cache.")
