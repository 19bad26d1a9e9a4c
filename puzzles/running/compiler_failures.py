"""Compiler failures whose own text says nothing a learner can act on, turned into what to change, whichever path
met them: the compile check on a CPU (compile_check/worker.py) or a launch on a GPU (errors.py).

Triton's warp-specialization pass takes only loads it can hand to a producer warp (a tensor descriptor's TMA copy);
a `tl.range(..., warp_specialize=True)` loop of `tl.load` of pointers makes the MLIR pipeline fail with
"PassManager::run failed" (Triton 3.7 on a CPU), after an assertion deep in the pass and the module's dump on stderr
(3.6 on a GPU)."""

from __future__ import annotations

import ast
import textwrap

PASS_FAILED = "PassManager::run failed"
WARP_SPECIALIZE_ADVICE = (
    "the compiler could not warp-specialize the loop at this line (warp_specialize=True): its producer warp can "
    "only issue TMA copies, and this loop loads tiles with tl.load of pointers; load through a tensor descriptor "
    "instead (x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK]), then "
    "x_desc.load([m0, k0])), which also handles the edges without masks")


def warp_specialized_loop_line(source: str, first_line: int) -> int | None:
    """The file line of the first loop of `source` (a function starting at `first_line`) that asks for warp
    specialization (`warp_specialize=` anything but a literal False); None where none does."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.For) or not isinstance(node.iter, ast.Call):
            continue
        if any(k.arg == "warp_specialize" and not (isinstance(k.value, ast.Constant) and not k.value.value)
               for k in node.iter.keywords):
            return first_line + node.lineno - 1
    return None
