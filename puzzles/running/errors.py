"""Why a kernel did not finish, in words a learner can act on: `KernelError`, made from an exception
with the learner's line, and the advice for Triton's own messages.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from typing import Any

from triton.runtime import interpreter as _interp

from puzzles.running import interpreter_hooks
from puzzles.running.compiler_failures import PASS_FAILED, WARP_SPECIALIZE_ADVICE, warp_specialized_loop_line
from puzzles.running.kernel import kernel_file, unwrap_kernel
from puzzles.running.kernel_source import read_source
from puzzles.running.lines import compilation_line, line_calling
from puzzles.running.recording import LIBRARY_DIRS


@dataclass
class KernelError:
    """Why a run did not finish, in words a learner can act on."""

    kind: str  # "exception", "timeout", "crash", "signature", "spec", "rule"
    message: str
    line: int | None = None
    source: str = ""
    filename: str | None = None

    def describe(self) -> str:
        where = f"\n  at line {self.line}: {self.source.strip()}" if self.line else ""
        return f"{self.message}{where}"


def error_from_exception(exc: BaseException, kernel: Any = None) -> KernelError:
    """Point at the learner's line; drop the frames of Triton and of this harness."""
    fn = unwrap_kernel(kernel) if kernel is not None else None
    filename = kernel_file(kernel) if kernel is not None else None
    cause = exc
    while isinstance(cause, _interp.InterpreterError) and cause.__cause__ is not None:
        cause = cause.__cause__
    line, source, file_seen = None, "", None
    for frame, lineno in traceback.walk_tb(cause.__traceback__):
        name = frame.f_code.co_filename
        if name.startswith(LIBRARY_DIRS):
            continue
        if filename is None or name == filename:
            line, file_seen = lineno, name
    compiled_at = compilation_line(cause, fn)
    if compiled_at is None and line is None:
        compiled_at = line_calling(str(cause), fn)
    if compiled_at is not None and filename is not None:
        line, file_seen = compiled_at, filename
    if line is not None:
        import linecache

        source = linecache.getline(file_seen, line)
    # A compilation error's text repeats the source with a caret; its own message is enough here.
    message = getattr(cause, "error_message", None) or str(cause).strip() or type(cause).__name__
    # The interpreter wraps errors as repr() strings; show the inner message plainly.
    if message.startswith(type(cause).__name__ + "("):
        message = message[len(type(cause).__name__) + 1 : -1].strip("'\"")
    text = f"{type(cause).__name__}: {message}"
    if PASS_FAILED in text and fn is not None:  # a compile on a GPU that failed in an MLIR pass (compiler_failures)
        found = read_source(getattr(fn, "fn", fn))
        loop = warp_specialized_loop_line(found.text, found.first_line) if found is not None else None
        if loop is not None:
            import linecache

            return KernelError("compile", WARP_SPECIALIZE_ADVICE, loop, linecache.getline(filename or "", loop),
                               filename)
    if uses_removed_block_pointers(text):
        return KernelError("exception", block_pointers_removed(), line, source, file_seen)
    hint = triton_error_hint(text, source)
    return KernelError("exception", f"{text} ({hint})" if hint else text, line, source, file_seen)


TORCH_IN_A_KERNEL = ("a kernel calls triton.language's functions and your own @triton.jit functions only; torch's "
                     "functions work on torch tensors, not on a kernel's blocks: use tl.exp, tl.maximum, tl.sum, ..., "
                     "or plain operators")


LIBDEVICE_IN_THE_INTERPRETER = (
    "libdevice (triton.language.extra's CUDA math library) is only linked in when a kernel is compiled for a GPU: "
    "Triton's CPU interpreter cannot run it; use triton.language's own functions (tl.exp, tl.exp2, tl.log, tl.sqrt, "
    "tl.rsqrt, tl.erf, tl.math...)")


# What replaces a block pointer, on a Triton without them (3.9 removed tl.make_block_ptr and tl.advance).
DESCRIPTOR_EXAMPLE = ("x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], "
                      "block_shape=[B1, B0]); x = x_desc.load([j0, i0]); ...; z_desc.store([j0, i0], z)")


def block_pointers_removed() -> str:
    """What a learner reads for a kernel that uses block pointers where this Triton has none (in place of
    Triton's NotImplementedError or AttributeError)."""
    import triton

    return (f"block pointers (tl.make_block_ptr, tl.advance) are gone from triton {triton.__version__} (3.9 removed "
            f"them): use a tensor descriptor, tl.make_tensor_descriptor, instead: {DESCRIPTOR_EXAMPLE}, where "
            "[j0, i0] is the block's first element (in place of tl.advance, pass new indices). A descriptor drops the "
            "lanes outside its shape (no boundary_check or mask is needed) and needs every stride but the last to be "
            "a multiple of 16 bytes; where one is not, use pointers with a mask")


def uses_removed_block_pointers(message: str) -> bool:
    """Triton's error is a block pointer's, on a Triton that has none."""
    return "Block pointers have been removed" in message or (
        bool(re.search(r"has no attribute '(make_block_ptr|advance)'", message))
        and not interpreter_hooks.has_block_pointers())


DESCRIPTOR_COORDINATES = (
    "a tensor descriptor's coordinates count elements, and Triton's interpreter asks that the last one fall on a "
    "multiple of 16 bytes (4 float32, 8 float16): is a coordinate counted in tiles (tl.program_id(0)) where the "
    "tile's first element belongs (tl.program_id(0) * B0)?")

DESCRIPTOR_STORE_SHAPE = (
    "a tensor descriptor's store takes a value of exactly its block_shape, and this one differs: a tile loaded as "
    "B1 × B0 and stored as B0 × B1 needs tl.trans(tile) (or check the order of the block_shape's sizes)")


def descriptor_strides() -> str:
    """The advice for a tensor descriptor over rows whose stride is no multiple of 16 bytes."""
    instead = "pointers with a mask"
    if interpreter_hooks.has_block_pointers():
        instead += ", or a block pointer (tl.make_block_ptr),"
    return ("a tensor descriptor (tl.make_tensor_descriptor, the GPU's TMA) needs every stride but the last to be a "
            "multiple of 16 bytes, and the puzzle's sizes include rows that are not (an odd number of floats): load "
            f"through {instead} instead")


# Triton's messages for a beginner's usual mistakes, with what to write instead: (part of the message, advice).
_TRITON_ERROR_HINTS = (
    ("arange's arguments must be of type tl.constexpr",
     "tl.arange takes constant bounds: a block size declared `B0: tl.constexpr`, not a size such as N0 that is "
     "only known at run time; take a block of B0 and mask the lanes past N0, and shift it as in j + tl.arange(0, B1)"),
    ("arange's range must be a power of 2",
     "a block's length must be a power of two: use the puzzle's block size (B0, B1, ...) and mask the lanes past "
     "the real size"),
    ("make_shape_compatible: incompatible dimensions",
     "two blocks of different shapes meet in one operation: give a 1-D block a second axis so they broadcast, "
     "x[:, None] for a column and x[None, :] for a row"),
    ("Expected pointer argument to have shape",
     "the value (or the mask) given to tl.store has a larger shape than the block of pointers, whose shape is the "
     "second one: reduce the value to the pointers' shape (tl.sum(..., axis=...)) or build the pointers with "
     "the value's shape"),
    # Triton 3.5's interpreter, where later ones broadcast the value to the pointers' shape or name the shapes.
    ("Cannot broadcast, rank mismatch",
     "two blocks with different numbers of axes meet (the shapes above; in tl.store the value and the block of "
     "pointers): give a 1-D block a second axis, x[:, None] for a column and x[None, :] for a row, or reduce a "
     "larger value to the pointers' shape (tl.sum(..., axis=...))"),
    ("argument cannot be block type if pointer argument is not a block",
     "a block (the value, the mask or other=) goes with a single pointer: add the block's offsets to the pointer "
     "(ptr + offsets), or reduce the block to one number first"),
    ("Unsupported ptr type",
     "tl.load and tl.store take pointers, and this is a block of integers (an address read from a table, or "
     "offsets without their base pointer): turn an address into a pointer with "
     ".to(tl.pointer_type(tl.float32)) before adding offsets, or add the offsets to a pointer argument (x_ptr + "
     "offsets)"),
    ("has no len()",
     "a block has no len(): its length is the block size it was made with (B0), a constant you already have, or "
     "x.shape[0]"),
    # tl.dot_scaled (Triton 3.8 on) reads K over the scale's last axis: an operand's scales are (its rows) × K/32.
    ("scale factor must be 16 or 32",
     "tl.dot_scaled wants one scale per 32 values along K on the LAST axis of the scale tile: BM × BK/32 for the "
     "left operand and BN × BK/32 for the right one (a K/32 × N tensor is loaded transposed: rows n, columns "
     "k // 32)"),
    ("must have equal reduction dimensions",
     "tl.dot(a, b) multiplies an M × K block by a K × N block: a's last axis and b's first axis must have the same "
     "length (check the order of the operands and of the tile's axes)"),
)


def triton_error_hint(message: str, source: str = "") -> str:
    """What to write instead, for the interpreter's messages that name the rule but not the fix, or that
    name something else than the mistake on the line `source` ("" if none)."""
    # The interpreter's words, then the compiler's (on a GPU; which one depends on the block size): one advice.
    if ("must be Tensor, not tensor" in message or ("torch." in source and "not tensor" in message)
            or "Unsupported function referenced" in message):
        return TORCH_IN_A_KERNEL
    # (Triton 3.6's compiler, on a GPU: "`_semantic` argument must be provided outside of JIT functions")
    if re.search(r"\w_ptr\s*\[", source) and ("not iterable" in message or "not subscriptable" in message
                                                 or "index" in message or "_semantic" in message):
        return ("a pointer is not indexed like an array: read a block with tl.load(x_ptr + offsets) and write one "
                "with tl.store(z_ptr + offsets, value)")
    if "libdevice" in source:
        return LIBDEVICE_IN_THE_INTERPRETER
    if "stride must be 16-byte aligned" in message:
        return descriptor_strides()
    if "block offset start must be 16-byte aligned" in message:
        return DESCRIPTOR_COORDINATES
    # A descriptor store's value against its block shape: a bare assert up to Triton 3.8, the two shapes from 3.9.
    bare = message.strip() in ("AssertionError", "AssertionError: AssertionError")
    if (bare or "expected value shape" in message) and re.search(r"\w\.store\(", source):
        return DESCRIPTOR_STORE_SHAPE
    if ("object is not iterable" in message or "unsupported tensor index" in message) and re.search(
            r"\w\[(?![^]]*(:|None))[^]]*\]", source):
        return ("a block has no element access by position: compute on the whole block, choosing elements with "
                "tl.where(offsets == i, new, x), or load and store the one element at ptr + i")
    return next((advice for part, advice in _TRITON_ERROR_HINTS if part in message), "")


def timeout_message(timeout: float, sizes: str = "", where: str = "", call: str = "test(..., timeout={})") -> str:
    """What a learner reads when a kernel is stopped (every way of running it says the same):
    the size, the limit and how to raise it (`call`, the limit in its braces; "" where the learner cannot);
    `KernelError.line` adds the line it was on."""
    at = f" at {sizes}" if sizes else ""
    raise_it = f" if it is only slow, raise the limit: {call.format(f'{max(2 * timeout, 60):g}')}" if call else ""
    # In parentheses: the line the kernel was on follows ("... was stopped (...) at line 12: ...").
    return (f"the kernel ran past its time limit of {timeout:g} s{at}{where} and was stopped "
            f"(an endless loop?{raise_it})")

