"""Puzzle 2 written in ways Triton's interpreter runs but its GPU compiler rejects (each met in answers to the
earlier courses), and kernels that ask whether they are interpreted: only the compile check, or their source, can
fail them. `BAD_LINE` marks the line the compiler names (the tests find it by that marker)."""

from __future__ import annotations

import triton
import triton.language as tl

from puzzles import breakpoint_if, print_if

# -- right under the interpreter, rejected by the GPU compiler (BAD_LINE: the line it names) ------------------------

OFFSET = 10.0  # a plain global, not tl.constexpr: the GPU compiler refuses to read it


HELPER_OFFSET = tl.constexpr(10.0)


@triton.jit
def add_mask2_kernel_lambda(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    plus_ten = lambda v: v + 10.0  # noqa: E731  BAD_LINE
    tl.store(z_ptr + offsets, plus_ten(tl.load(x_ptr + offsets, mask=offsets < N0)), mask=offsets < N0)


@triton.jit
def add_mask2_kernel_global(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + OFFSET, mask=offsets < N0)  # BAD_LINE


@triton.jit
def add_mask2_kernel_nested_def(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)

    def load(ptr):  # BAD_LINE
        return tl.load(ptr + offsets, mask=offsets < N0)

    tl.store(z_ptr + offsets, load(x_ptr) + 10.0, mask=offsets < N0)


@triton.jit
def _plus_offset_bad(v):
    return v + OFFSET  # BAD_LINE


@triton.jit
def add_mask2_kernel_bad_helper(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, _plus_offset_bad(x), mask=offsets < N0)


@triton.jit
def _plus_offset(v):
    return v + HELPER_OFFSET


@triton.jit
def add_mask2_kernel_good_helper(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, _plus_offset(x), mask=offsets < N0)


@triton.jit
def add_mask2_kernel_tuple_loop(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    parts = (4.0, 6.0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    for i in range(2):
        x += parts[i]  # BAD_LINE
    tl.store(z_ptr + offsets, x, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_tuple_static_range(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    parts = (4.0, 6.0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    for i in tl.static_range(len(parts)):  # unrolled: parts[i] has a constant index
        x += parts[i]
    tl.store(z_ptr + offsets, x, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_break(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    for i in range(20):
        x += 1.0
        if i == 9:
            break  # BAD_LINE
    tl.store(z_ptr + offsets, x, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_if_on_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    if offsets < N0 + B0:  # BAD_LINE
        x += 10.0
    tl.store(z_ptr + offsets, x, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_element_index(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    first = offsets[0]  # BAD_LINE
    tl.store(z_ptr + offsets, x + 10.0 + first * 0, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_iterate_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    for v in offsets:  # BAD_LINE
        x += v * 0.0
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_name_in_one_branch(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * B0 + tl.arange(0, B0)
    if pid >= 0:
        y = tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0
    tl.store(z_ptr + offsets, y, mask=offsets < N0)  # BAD_LINE


def _plus_ten_plain(v):  # not @triton.jit: the interpreter calls it, the compiler refuses
    return v + 10.0


@triton.jit
def add_mask2_kernel_plain_function(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, _plus_ten_plain(x), mask=offsets < N0)  # BAD_LINE


@triton.jit
def add_mask2_kernel_returns(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)
    return x  # BAD_LINE


@triton.jit
def add_mask2_kernel_debugging(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    print_if("offsets", offsets, pid_0=[1])
    breakpoint_if(pid_0=[99])
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)


SETTINGS = {"offset": 10.0}  # a dict: the compiler's process gets an opaque stand-in for it


@triton.jit
def add_mask2_kernel_default_from_a_dict(x_ptr, z_ptr, N0, B0: tl.constexpr, OFF=SETTINGS["offset"]):
    """Right values, but its default reads a dict, so the compiler's process cannot even define it."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)


# Right under the interpreter, x + 9 once compiled: each tells the two apart in its own way.
@triton.jit
def add_mask2_kernel_asks_its_handle(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    if hasattr(x.handle, "data"):  # BAD_LINE: only the interpreter's blocks hold numpy data
        handle = x.handle
        handle.data = handle.data + 10.0  # host arithmetic on the loaded values
        tl.store(z_ptr + offsets, x, mask=offsets < N0)
    else:
        tl.store(z_ptr + offsets, x + 9.0, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_asks_the_knobs(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    if triton.knobs.runtime.interpret:  # BAD_LINE
        tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)
    else:
        tl.store(z_ptr + offsets, x + 9.0, mask=offsets < N0)


@triton.jit
def _plus_ten_when_interpreted(x):
    if x.handle.__class__.__name__ == "TensorHandle":  # BAD_LINE
        return x + 10.0
    return x + 9.0


@triton.jit
def add_mask2_kernel_helper_asks_the_class(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, _plus_ten_when_interpreted(x), mask=offsets < N0)


@triton.jit
def add_mask2_kernel_compares_functions(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    if tl.load is not tl.core.load:  # BAD_LINE: the interpreter swaps tl.load while it runs
        tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)
    else:
        tl.store(z_ptr + offsets, x + 9.0, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_fair_comparisons(x_ptr, z_ptr, N0, B0: tl.constexpr, SCALE=None):
    """Comparisons a kernel may make: of dtypes, of constexprs, `is None` on a parameter."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    if x.dtype == tl.float32 and HELPER_OFFSET == 10.0 and SCALE is None:
        x = x + HELPER_OFFSET
    tl.store(z_ptr + offsets, x, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_reaches_a_frame(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Reaches the interpreter's frames (and through them any module) with no module or dunder named."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    frame = (v for v in (0,)).gi_frame.f_back  # BAD_LINE
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0 + 0 * len(frame.f_globals),
             mask=offsets < N0)


class _Helpers:
    def plus_ten(self, v):  # a method: Python the interpreter runs, the compiler refuses
        return v + 10.0


HELPERS = _Helpers()


@triton.jit
def add_mask2_kernel_method_of_an_object(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, HELPERS.plus_ten(x), mask=offsets < N0)  # BAD_LINE
