"""The `Puzzle` record: everything the course says about one puzzle, written once.

A puzzle's statement, spec, sizes, hints and kernel name live in its module under
`puzzles/course/catalog/`; its reference kernel lives in `solutions/`, and the starter kernel is
cut out of that reference (the region between `# BEGIN SOLUTION` and `# END SOLUTION`).
The notebooks, the tests, the grading command and the diagrams are all built from these
records, so nothing is written twice.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.picture_hooks import LoopedAlong, RegisterTensor, SharedRows, SlidingWindow, TileOrder
from puzzles.course.solution_source import kernel_signature
from puzzles.course.spec import ParsedSpec, parse_spec

Sizes = dict[str, int]


@dataclass(frozen=True)
class Baseline:
    """A faster kernel for the same problem, timed beside the learner's at the same size: the gap
    between the two is the lesson. `launcher` names a function ("module:function", imported only when
    timed, so the catalog and the learner's notebook never import the solutions) that gets the spec's
    inputs on the GPU and the sizes, and returns a function that runs the baseline once."""

    name: str
    lesson: str
    launcher: str

    def launch(self, inputs: list[Any], sizes: Sizes) -> Callable[[], Any]:
        module, function = self.launcher.split(":")
        return getattr(importlib.import_module(module), function)(inputs, sizes)


@dataclass(frozen=True)
class CpuSpeedGoal:
    """A speed goal graded without a GPU, from the run the interpreter recorded (test's efficiency report,
    grading/efficiency.py): at most `bytes_within` times the fewest bytes the problem needs from memory, every
    load and store within `coalesced_within` times the fewest 32-byte sectors its warps could touch, and a predicted
    time within `time_within` of the reference's, predicted the same way (small loads one after another move few
    bytes, coalesced, and still take long)."""

    bytes_within: float = 1.1
    coalesced_within: float = 1.1
    time_within: float = 1.1

    def text(self) -> str:
        return (f"at most {self.bytes_within:g}x the fewest bytes from memory, every load and store coalesced "
                f"(within {self.coalesced_within:g}x the fewest sectors per warp), and a predicted time within "
                f"{self.time_within:g}x the reference's")


@dataclass(frozen=True)
class SpeedGoal:
    """What "fast" means for a puzzle on a GPU, at its perf size: at least `vs_compile` times the speed
    of `torch.compile(spec)` (1.0: as fast), and, where the roofline is the real bound, at least
    `roofline` of it (a fraction, 0.6 = 60%). `levers` says what usually closes the gap here (block
    sizes, num_warps, fusion, tl.dot, vector width), in the words the speed report shows. A puzzle whose
    kernel cannot be compared with torch.compile's (its grid is the lesson) has `vs_compile=0` and says
    why in `compile_note`: torch.compile's time is still reported, beside the note."""

    vs_compile: float = 1.0
    roofline: float | None = None
    levers: str = ""
    compile_note: str = ""
    # The puzzle's library op (Puzzle.library) is timed and shown but is no part of the goal: why (a shape or an
    # input layout that makes it unbeatable for the puzzle's kernel). Without it, the goal's bar is the fastest
    # of eager torch, torch.compile and the library op (perf.PerfReport.bar).
    library_note: str = ""

    def __post_init__(self) -> None:
        if bool(self.compile_note) == bool(self.vs_compile):
            raise ValueError("a SpeedGoal without a torch.compile part says why (compile_note), and only then")
        if not self.vs_compile and not self.roofline:
            raise ValueError("a SpeedGoal needs a torch.compile part or a roofline part")

    def text(self, library: str = "") -> str:
        """The goal in words: `at least torch.compile's speed and 60% of the roofline`; with the label of the
        puzzle's library op (where it is part of the goal), `at least the speed of the fastest of ...`."""
        if not self.vs_compile:
            return f"at least {self.roofline:.0%} of the roofline (torch.compile is no goal here: {self.compile_note})"
        if library and not self.library_note:
            bar = f"the speed of the fastest of torch, torch.compile and {library}"
            speed = bar if self.vs_compile == 1.0 else f"{self.vs_compile:g}x {bar}"
        else:
            speed = ("torch.compile's speed" if self.vs_compile == 1.0
                     else f"{self.vs_compile:g}x torch.compile's speed")
        text = f"at least {speed}" + (f" and {self.roofline:.0%} of the roofline" if self.roofline else "")
        if library and self.library_note:  # shown beside the kernel, but no goal
            text += f" ({library} is no goal here: {self.library_note})"
        return text


@dataclass(frozen=True)
class ScalarWork:
    """Arithmetic a kernel does one element at a time, off the tensor cores, at a puzzle's size: FP32
    multiply-adds (a multiply, an add or a fused multiply-add counts one each) and exponentials (each
    `tl.exp`/`tl.exp2` one trip through the special-function units). The fewest a kernel can do: the
    speed report's compute floor for elementwise work (puzzle 9's scores, exps and weighted sums)."""

    fmas: int = 0
    exps: int = 0


@dataclass(frozen=True)
class FastReference:
    """A second model answer, for a puzzle whose teaching reference stays simple and is slower than
    `torch.compile(spec)` at the perf size: the kernel of the same name and signature in
    `solutions/pNN_<slug>_fast.py`, launched on the same grid, so `test()` grades it as it grades any
    answer. `changes` tells the notebook what it does differently and why that is faster."""

    changes: str


@dataclass(frozen=True)
class CompiledRule:
    """A puzzle graded on its compiled code as well as its values (puzzle 23): compiled for `target` (sm_90 by
    default) at the canonical size, every global load and store moves at least `min_bits` per thread and
    instruction (128: `ld.global.v4.b32`, four float32 at once). The compile check judges it on the full
    compile it does anyway (puzzles/running/compiled_code/rules.py); a kernel that keeps it is told each load
    and store and its width, one that does not is told which is narrower, at which line, which of the compiler's
    conditions it misses (read from the TTGIR: compiled_code/vector_width.py), and `advice`. With `tma` the rule is
    what moves the tiles, not how wide: each load and store that is not a TMA copy is named at its line. With `stages`
    the rule is the shape of the K loop: pipelined in that many buffers, warp-specialized (pipelining.py)."""

    min_bits: int = 128
    target: int = 90
    advice: str = ""
    # Puzzle 29's rule instead of the width: every global load and store is a TMA copy (cp.async.bulk.tensor, the
    # copy engine moving a whole tile: a tensor descriptor's load and store on sm_90), none an instruction per thread.
    tma: bool = False
    # Puzzle 31's rule instead: the K loop (the loop around the tl.dot) rotates its tiles through `stages` shared-memory
    # buffers (software pipelining, num_stages) and, with `warp_specialized`, is split into producer and consumer
    # warps (ttg.warp_specialize in the TTGIR). 0 and False: not asked.
    stages: int = 0
    warp_specialized: bool = False


@dataclass(frozen=True)
class TritonFeature:
    """A Triton API a puzzle's kernel needs that not every Triton has (device-side tensor descriptors): `api` in the
    learner's words, `since` the first Triton whose interpreter runs it, `present` whether the installed one does
    (running/interpreter_hooks.py). Where it is absent the grader says so instead of running the kernel."""

    api: str
    since: str
    present: Callable[[], bool]
    # The triton.language function that needs it, where the puzzle has another path that runs everywhere (puzzle
    # 33: tl.dot_scaled): only a kernel that calls it is refused. "": every kernel of the puzzle needs the API.
    call: str = ""
    # The oldest GPU target Triton compiles `call` for, where newer than the puzzle's min_sm (tl.dot_scaled with e2m1:
    # sm_90, ptxas fails on Triton's sm_80 code in 3.7-3.9): the compile check leaves the older targets out.
    compiles_from_sm: int = 0

    def missing(self, number: int) -> str:
        """What the verdict says where the installed Triton lacks the API ("" where it has it)."""
        if self.present():
            return ""
        from puzzles.running import compat

        below = ".".join(map(str, compat.BELOW))
        return (f"puzzle {number} needs {self.api}, which Triton's interpreter runs from triton {self.since} on, and "
                f"this is triton {compat.installed_triton()}: install one that has it, pip install "
                f"'triton>={self.since},<{below}' (`python -m puzzles doctor` says what the installed one runs)")


@dataclass(frozen=True)
class Mistake:
    """A common slip, computed (puzzles/course/mistakes.py): `output(inputs by name, sizes)` is what the spec
    gives with the slip in it; a wrong output that matches it gets `text` in its verdict, followed by
    `where(sizes)` when given: what the slip did at that size (which rows took the wrong group). `by_rows`: the
    slip's values depend on rounding that the kernel's order of operations changes (a sum that cancels), so it is
    recognised by the rows it gets wrong (the same rows as the kernel's, where those are the only wrong ones),
    and only after every slip matched by its values."""

    text: str
    output: Callable[[dict[str, Any], Sizes], Any]
    where: Callable[[Sizes], str] | None = None
    by_rows: bool = False

    def text_at(self, sizes: Sizes) -> str:
        """The sentence for a verdict at these sizes."""
        detail = self.where(sizes) if self.where is not None else ""
        return f"{self.text}; {detail}" if detail else self.text


@dataclass(frozen=True)
class OutputPart:
    """One result packed into a puzzle's output: its name, how many indices of the packing axis it takes (a
    size's name, or a number), and whether it keeps that axis as an index of its own (dx[m, n], rows 0 … M-1)
    or has none (dw[n], one row)."""

    name: str
    extent: str | int
    keeps_axis: bool = True


@dataclass(frozen=True)
class OutputParts:
    """Results packed into one output along `axis`, in order (puzzle 26: dx, then dw, then db, down the rows):
    verdicts name an element by its result, dw[3], not z[30, 3]."""

    axis: int
    parts: tuple[OutputPart, ...]

    def locate(self, index: tuple[int, ...], sizes: Sizes) -> tuple[OutputPart, tuple[int, ...]] | None:
        """The part holding z[index] and the element's index in it (None: past the parts, or another rank)."""
        if self.axis >= len(index):
            return None
        start, at = 0, index[self.axis]
        for part in self.parts:
            extent = int(sizes[part.extent]) if isinstance(part.extent, str) else part.extent
            if at < start + extent:
                own = list(index)
                if part.keeps_axis:
                    own[self.axis] = at - start
                else:
                    del own[self.axis]
                return part, tuple(own)
            start += extent
        return None

    def element(self, index: tuple[int, ...], sizes: Sizes) -> str:
        """`dw[3]` for z[M, 3]; `z[...]` where no part holds the index."""
        found = self.locate(index, sizes)
        if found is None:
            return "z[" + ", ".join(str(i) for i in index) + "]"
        part, own = found
        return f"{part.name}[{', '.join(str(i) for i in own)}]" if own else part.name


Grid = Callable[[Sizes], tuple[int, ...]]


def cdiv(a: int, b: int) -> int:
    """Ceiling division, as `triton.cdiv`."""
    return -(-a // b)


def default_grid(sizes: Sizes) -> tuple[int, ...]:
    """The course's grid: axis k covers N<k> in blocks of B<k>; missing axes are 1."""
    grid = []
    for axis in range(3):
        n, b = sizes.get(f"N{axis}"), sizes.get(f"B{axis}")
        if n is None or b is None:
            break
        grid.append(cdiv(n, b))
    return tuple(grid) or (1,)


POINTERS = ("addresses", "numels", "chunks")


@dataclass(frozen=True)
class TensorLists:
    """How a puzzle's spec inputs become lists of tensors and tables for the kernel
    (puzzle 21; the lists and their tables are built in puzzles/grading/tensor_lists.py)."""

    lists: tuple[str, ...]  # spec inputs that are lists (each laid end to end in the spec)
    outputs: tuple[str, ...]  # the lists the kernel writes, one row of z each
    pointers: tuple[str, ...] = POINTERS  # the kernel's pointer arguments before z_ptr

    @staticmethod
    def lengths(sizes: Sizes) -> list[int]:
        """The tensors' sizes: L0, L1, ... up to K."""
        return [int(sizes[f"L{k}"]) for k in range(int(sizes["K"]))]


@dataclass(frozen=True)
class KSlice:
    """Where one input lies along the split axis: `axis` of the input indexes it, each index covering
    `rows` consecutive rows of K (1 for `a` and `b`; 8 for int4 words packed along K)."""

    tensor: str
    axis: int
    rows: int = 1


@dataclass(frozen=True)
class Reduction:
    """The axis a kernel loops over and sums away (`length`, a size's name: K, MID, T) and where one input
    lies along it: a wrong output whose loads never reached some rows of it is told which (a loop that
    stops early, or skips a chunk)."""

    length: str
    reads: KSlice


@dataclass(frozen=True)
class SplitK:
    """The split-K contract (puzzles 17, 18): grid axis `grid_axis` numbers the parts; the parts of an
    output tile reduce disjoint shares of the `length` rows, each part a share (the statements give the
    `chunk`-row chunks s, s + parts, …), and add their partial results into the output with
    `tl.atomic_add` (the output starts at zero)."""

    inputs: tuple[KSlice, ...]
    parts: str = "SPLIT_K"
    chunk: str = "BK"
    length: str = "K"
    grid_axis: int = 2

    def rule(self) -> str:
        return (f"the parts (tl.program_id({self.grid_axis})) share {self.length}: each reduces its own rows, "
                f"which no other part reads (the statement's: the {self.chunk}-row chunks s, s + {self.parts}, "
                f"s + 2·{self.parts}, …, ⌊k / {self.chunk}⌋ mod {self.parts} = s), and adds its partial tile "
                "into z with tl.atomic_add")


@dataclass(frozen=True)
class TileOnce:
    """Every `block` tile of the 2-D output (rows × columns, sizes by name) is computed by one program, once
    (puzzle 30's persistent loop). Right values cannot show it: a tile computed twice stores the same values
    twice. So the recorded stores are read, and a tile stored twice, or never, is named by its (tile row, tile
    column)."""

    block: tuple[str, str]
    loop: str = "for tile in range(pid, num_tiles, NUM_PROGRAMS)"
    # For the diagram: the output's sizes, the size that counts the programs, and the grouped order's band.
    dims: tuple[str, str] = ("M", "N")
    programs: str = "NUM_PROGRAMS"
    group: str = "GROUP_M"

    def rule(self) -> str:
        rows, cols = self.block
        return (f"each {rows} × {cols} tile of z is computed once, by one program: the programs share the tiles, "
                f"program pid taking tiles pid, pid + NUM_PROGRAMS, pid + 2·NUM_PROGRAMS, … ({self.loop})")


@dataclass(frozen=True)
class Puzzle:
    """One puzzle of the course.

    `sizes[0]` is the canonical size (the one in the notebook's grading cell); the others are
    variations the statement allows, so that a hard-coded size or a missing mask fails.
    """

    number: int
    slug: str
    title: str
    kernel_name: str
    spec: Callable[..., Any]
    statement: str
    sizes: tuple[Sizes, ...]
    hints: tuple[str, ...]
    grid: Grid = default_grid
    rtol: float = 1e-3
    atol: float = 1e-3
    # Per size, a factor on the drawn float inputs (softmax uses large values at one size to
    # catch kernels that are not numerically stable); sizes past the tuple's end use 1.
    input_scales: tuple[float, ...] = ()
    # Names of sizes the kernel receives but does not need (stated in the text).
    unused_sizes: tuple[str, ...] = ()
    # "poison": the output starts as a never-written marker; "zeros": it starts at zero (for
    # kernels that accumulate into it with atomics), and unwritten elements are found from
    # the recorded stores instead.
    output_init: str = "poison"
    # Triton functions the statement rules out (e.g. ("dot",)): the grader rejects a kernel that calls them.
    forbidden_calls: tuple[str, ...] = ()
    # Speed (GPU only): the size of the performance challenge, and the FLOPs the problem needs
    # there (0 for a memory-bound puzzle); the fewest bytes come from the spec's shapes.
    perf_size: Sizes | None = None
    # Inputs the grader lays out with strides of its own (not contiguous): input name -> the
    # names of the sizes that hold its stride along each axis, in elements. The kernel gets
    # those strides as arguments; a kernel that assumes a contiguous layout reads the gaps.
    strided_inputs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Inputs that are lists of tensors of different sizes (puzzle 21): a `TensorLists` saying which
    # spec inputs are lists and which tables (addresses, sizes, chunks) the kernel gets instead.
    tensor_lists: TensorLists | None = None
    # A split-K reduction (puzzles 17, 18): the contract checked from the recorded accesses.
    split_k: SplitK | None = None
    # Cells the notebook adds after the grading cell, as (kind, source): "markdown" or "code".
    notebook_cells: tuple[tuple[str, str], ...] = ()
    # Cells the notebook shows after the spec and before the learner's kernel, as (kind, source): what to do
    # first (puzzle 22: compile the spec and read inductor's code).
    lead_cells: tuple[tuple[str, str], ...] = ()
    # Weight in a class's gradebook (python -m puzzles grade CLASS/ --out DIR): points for a pass.
    points: float = 1.0
    flops: Callable[[Sizes], int] | None = None
    # The elementwise arithmetic the problem needs at a size (FMAs and exps, a `ScalarWork`): its compute floor.
    scalar_work: Callable[[Sizes], ScalarWork] | None = None
    # The oldest GPU (compute capability x10) the puzzle's kernel must compile for, besides
    # sm_80 and sm_90: 75 is Colab's free T4; raise it where the puzzle needs newer hardware.
    min_sm: int = 75
    # -- for the pictures (diagrams, the memory picture): records from puzzles/course/picture_hooks.py --------
    # The output is the order of C's tiles (puzzle 16): both pictures draw the tiles.
    tile_order: TileOrder | None = None
    # Tensors a program walks whole in loop steps along a dimension the grid tiles elsewhere (attention backward).
    looped_along: LoopedAlong | None = None
    # A tensor computed but never stored (flash attention's scores), drawn dashed in the diagram.
    register_tensor: RegisterTensor | None = None
    # A loop over output pixels, each from a window of the input (convolution): the diagram shows one step.
    sliding_window: SlidingWindow | None = None
    # Output rows that every program adds into after its per-row results (puzzle 26's dw and db).
    shared_rows: SharedRows | None = None
    # Shown under the memory picture's launch-order view (the widget): what the order means here.
    launch_order_note: str = ""
    # -- grading hooks that few puzzles need ------------------------------------------------------------
    # Draws a size's inputs instead of the spec's random draw (puzzles/course/bug_inputs.py): (spec, sizes, seed)
    # -> inputs shaped so that a known bug shows at that size.
    draw_inputs: Callable[..., Any] | None = None
    # "element": rtol/atol per element; "row": atol relative to each row's largest value (softmax).
    tolerance: str = "element"
    # An @triton.autotune puzzle (20): the values the grader's own configs may take (meta-parameter or
    # "num_warps" -> allowed values); None for a puzzle whose kernel is not autotuned.
    autotune: dict[str, tuple[int, ...]] | None = None
    # Sizes the notebook's own launch passes by position (puzzle 20's benchmark cell), so the grader does too.
    positional_sizes: tuple[str, ...] = ()
    # A faster kernel timed beside the learner's by `test(..., perf=True)` (puzzle 18: the production GPTQ kernel).
    baseline: Baseline | None = None
    # The speed goal on a GPU at `perf_size` (stated in the notebook; the speed report says if it is met).
    speed_goal: SpeedGoal | None = None
    # A speed goal graded on a CPU too, from the efficiency report (on by default there for this puzzle).
    cpu_speed_goal: CpuSpeedGoal | None = None
    # The library op a user would call instead (torch.bmm with TF32, F.layer_norm): timed beside eager torch and
    # torch.compile, and part of the speed goal's bar (puzzles/course/library_baseline.py) ...
    library: LibraryBaseline | None = None
    # ... or why the puzzle has none (the spec is already that op; no op computes it).
    no_library: str = ""
    # A faster second reference beside a teaching reference that stays simple (solutions/pNN_<slug>_fast.py).
    fast_reference: FastReference | None = None
    # Slips whose output the verdict recognises (a wrong matmul says nothing of its cause): puzzles/course/mistakes.py.
    likely_mistakes: tuple[Mistake, ...] = ()
    # The axis the kernel loops over (a split-K puzzle's is its K): rows of it no load reached are named.
    reduction: Reduction | None = None
    # Graded on the compiled code too (puzzle 23): how wide its global loads and stores must be.
    compiled_rule: CompiledRule | None = None
    # Several results packed into the one output (puzzle 26's dx, dw and db): verdicts name them.
    output_parts: OutputParts | None = None
    # A Triton API the kernel needs that some Tritons lack (puzzle 29's tensor descriptors): refused in words there.
    needs_triton: TritonFeature | None = None
    # Every output tile computed by one program, once (puzzle 30's persistent loop): checked from the stores.
    tile_once: TileOnce | None = None

    @property
    def id(self) -> str:
        return f"{self.number:02d}_{self.slug}"

    @property
    def canonical(self) -> Sizes:
        return self.sizes[0]

    @property
    def spec_name(self) -> str:
        return self.spec.__name__

    @property
    def parsed_spec(self) -> ParsedSpec:
        """The spec read once (puzzles/course/spec.py): its tensors, input names and keyword sizes."""
        return parse_spec(self.spec)

    @property
    def input_names(self) -> list[str]:
        return list(self.parsed_spec.input_names)

    @property
    def solution_module(self) -> str:
        return f"solutions.p{self.id}"

    def reference(self) -> Callable[..., Any]:
        """The reference kernel from `solutions/` (imported on demand)."""
        module = importlib.import_module(self.solution_module)
        return getattr(module, self.kernel_name)

    @property
    def fast_solution_module(self) -> str:
        return f"solutions.p{self.id}_fast"

    def fast_reference_kernel(self) -> Callable[..., Any]:
        """The fast reference kernel (imported on demand); only for a puzzle with a `fast_reference`."""
        if self.fast_reference is None:
            raise LookupError(f"puzzle {self.number} has no fast reference")
        return getattr(importlib.import_module(self.fast_solution_module), self.kernel_name)

    def expected_signature(self) -> str:
        """The kernel's signature as the statement gives it."""
        return kernel_signature(self)

    @property
    def reduced_axis(self) -> Reduction | None:
        """The reduction a wrong output's loads are checked against: the puzzle's, else its split-K's K."""
        if self.reduction is not None:
            return self.reduction
        if self.split_k is not None:
            return Reduction(self.split_k.length, self.split_k.inputs[0])
        return None

    def input_scale(self, size_index: int) -> float:
        return self.input_scales[size_index] if size_index < len(self.input_scales) else 1.0

    def grid_for(self, sizes: Sizes) -> tuple[int, ...]:
        return self.grid(sizes)
