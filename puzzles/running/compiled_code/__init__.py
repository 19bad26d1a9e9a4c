"""What a kernel compiles to, on any machine: `puzzles.compiled()`'s records, built from the compile check's
full compile (puzzles/running/compile_check/), which runs Triton's whole pipeline for a GPU target on a CPU
and keeps each stage's listing, the SASS (disassembled with the nvdisasm of Triton's wheel) and ptxas's
resource usage beside its verdict in the cache.

By job: reading.py (the listings as records: global loads and stores with their width and the learner's
line, what tl.dot became, registers and spills), record.py (`Compiled`), summary.py (its words, in text and
in a notebook), rules.py (a puzzle graded on its compiled code: `Puzzle.compiled_rule`), vector_width.py (what
the TTGIR says decides each load's and store's width: the rule's reasons), pipelining.py (a K loop's buffers and
warp specialization in the TTGIR: puzzle 31's rule), targets.py (sm_75,
sm_80, sm_90). Nothing here compiles: puzzles/running/compile_check/listings.py gets a listing (one kernel,
one call, one target, through the compile check's processes and cache) and makes a `Compiled` of it.
"""

from __future__ import annotations

from puzzles.running.compiled_code.reading import Access, DotUse, Resources
from puzzles.running.compiled_code.record import Compiled, from_listing, not_compiled
from puzzles.running.compiled_code.rules import RuleVerdict, judge
from puzzles.running.compiled_code.targets import TARGETS, target_number

__all__ = ["TARGETS", "Access", "Compiled", "DotUse", "Resources", "RuleVerdict", "from_listing", "judge",
           "not_compiled", "target_number"]
