"""`Compiled`: what a kernel compiled to for one GPU target, as `puzzles.compiled()` returns it: the four
listings (`.ttir`, `.ttgir`, `.ptx`, `.sass`), the numbers ptxas and Triton give (registers, spills, shared
memory, warps), and what the listings say about memory and tl.dot (puzzles/running/compiled_code/reading.py).
`.summary()` says it in a learner's words (summary.py); in a notebook it shows the summary with the listings
folded away under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from puzzles.running.compiled_code import reading, vector_width
from puzzles.running.compiled_code.reading import Access, DotUse, Resources
from puzzles.running.compiled_code.summary import summary_html, summary_text
from puzzles.running.compiled_code.targets import TARGETS
from puzzles.running.compiled_code.vector_width import MemoryOp


@dataclass
class Compiled:
    """One kernel compiled for one target (`puzzles.compiled(kernel, puzzle=N, target="sm_90")`)."""

    kernel: str
    target: int
    sizes: dict[str, int] = field(default_factory=dict)  # the sizes it was compiled at (the puzzle's canonical)
    ttir: str = ""
    ttgir: str = ""
    ptx: str = ""
    sass: str = ""
    num_warps: int = 0
    num_stages: int = 0
    shared: int = 0  # bytes of shared memory per program (Triton's, as the launch asks for it)
    resources: Resources | None = None
    accesses: list[Access] = field(default_factory=list)
    dots: list[DotUse] = field(default_factory=list)
    # The TTGIR's loads and stores with what decides their width (vector_width.py): a compiled rule's reasons.
    memory_ops: list[MemoryOp] = field(default_factory=list)
    error: Any = None  # a KernelError: why it would not compile (then the listings are empty)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def registers(self) -> int | None:
        """Registers per thread (ptxas)."""
        return self.resources.registers if self.resources else None

    @property
    def spills(self) -> bool:
        return bool(self.resources and self.resources.spills)

    @property
    def target_name(self) -> str:
        return TARGETS.get(self.target, f"sm_{self.target}")

    def loads(self) -> list[Access]:
        return [a for a in self.accesses if a.kind in ("load", "async copy", "TMA load")]

    def stores(self) -> list[Access]:
        return [a for a in self.accesses if a.kind in ("store", "TMA store")]

    def summary(self) -> str:
        return summary_text(self)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        if not self.ok:
            return self.summary()
        return self.summary() + "\n  (the listings: .ttir, .ttgir, .ptx, .sass)"

    def _repr_html_(self) -> str:
        return summary_html(self)


def from_listing(listing: dict[str, Any], kernel: str, target: int, functions: dict[str, dict],
                 sizes: dict[str, int] | None = None, with_sass: bool = True) -> Compiled:
    """The record of a full compile's listing (puzzles/running/compile_check/worker.py's listing_of), its
    lines placed in the learner's `functions` as they are now (name -> filename and def_line). The SASS is
    disassembled from the listing's cubin here, unless `with_sass` is False (a compiled rule reads the PTX
    alone: no SASS, no spill instructions counted)."""
    ptx, ttir = listing.get("ptx", ""), listing.get("ttir", "")
    sass = listing.get("sass") or (reading.disassemble(listing.get("cubin", "")) if with_sass else "")
    place = reading.placer(listing.get("functions") or [], functions)
    return Compiled(kernel=kernel, target=target, sizes=dict(sizes or {}), ttir=ttir, ttgir=listing.get("ttgir", ""),
                    ptx=ptx, sass=sass, num_warps=int(listing.get("num_warps") or 0),
                    num_stages=int(listing.get("num_stages") or 0), shared=int(listing.get("shared") or 0),
                    resources=reading.resources(listing.get("resources", ""), sass, ptx),
                    accesses=reading.global_accesses(ptx, place), dots=reading.dot_uses(ptx, ttir, place),
                    memory_ops=vector_width.memory_ops(listing.get("ttgir", ""), place))


def not_compiled(kernel: str, target: int, error: Any, sizes: dict[str, int] | None = None) -> Compiled:
    """The record of a kernel that does not compile for `target`: the compile check's message, no listings."""
    return Compiled(kernel=kernel, target=target, sizes=dict(sizes or {}), error=error)
