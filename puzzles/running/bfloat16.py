"""bfloat16 under Triton's interpreter, computed as a GPU computes it.

NumPy has no bfloat16, so Triton's CPU interpreter keeps a bfloat16 block as its raw 16-bit patterns (uint16)
and then, on every Triton the course supports, does integer arithmetic on them: `tl.dot` multiplies the
patterns (triton#11584), `x + y` adds them, `tl.sum` sums them, `tl.maximum` compares them as unsigned
integers, a float32 -> bfloat16 cast truncates where a GPU rounds to nearest even, and a float64 or integer
one stores the value converted to an integer. A correct bfloat16 kernel then fails on a CPU with wrong values
that look like the learner's slip.

While `as_on_a_gpu()` is active (every interpreted launch the course makes: `launch_memos()` in
interpreter.py), the interpreter's builder and its reductions work on the values instead: a bfloat16 operand
is widened exactly to float32, the operation runs there, and a bfloat16 result is rounded to nearest even
(NaN stays NaN, past the largest finite value it is infinity), bit for bit as torch rounds; `tl.dot` of
bfloat16 tiles multiplies and accumulates in float32, as tensor cores do. Loads, stores, `tl.where` and
bitcasts move the patterns and were right already. `interpreter_limit()` checks the result by what the
builder computes, so a Triton whose interpreter changed shape is named as the cause rather than the learner.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import triton
import triton.language as tl
from triton.runtime import interpreter as _interp

_NAME = "bf16"  # a Triton dtype's name for bfloat16 (dtype objects are not unique: compare names)
_QUIET_NAN = np.uint16(0x7FC0)  # what torch makes of any NaN


# -- the numbers -----------------------------------------------------------------------------------------------


def prints_values(printer: Any) -> bool:
    """Whether the builder's print method takes (prefix, hex, values, ...), read once per function, not per launch."""
    function = getattr(printer, "__func__", None)
    return takes_hex_and_values(function, 2) if function is not None else takes_hex_and_values(printer, 1)


@functools.cache
def takes_hex_and_values(function: Any, first: int) -> bool:
    return list(inspect.signature(function).parameters)[first:first + 2] == ["hex", "values"]


def widen(bits: np.ndarray) -> np.ndarray:
    """bfloat16 patterns as float32: exact (a bfloat16 is the top half of a float32)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_to_bfloat16(values: Any) -> np.ndarray:
    """The bfloat16 patterns nearest to `values` (float16, float32, float64, integers or booleans), ties to
    even, as torch's `.to(torch.bfloat16)` rounds (a float64 goes through float32 first, as torch's does)."""
    with np.errstate(over="ignore", invalid="ignore"):
        single = np.asarray(values).astype(np.float32)
    bits = single.view(np.uint32)
    # Adding 0x7FFF (0x8000 when the kept half is odd) carries into the kept half exactly when the dropped
    # half is past the tie (or at it, with an odd kept half); a carry out of the largest finite value lands
    # on infinity's pattern.
    rounded = ((bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16))
    return np.where(np.isnan(single), _QUIET_NAN, rounded.astype(np.uint16))


def truncate_to_bfloat16(values: Any) -> np.ndarray:
    """The bfloat16 patterns of `values` rounded toward zero (`fp_downcast_rounding="rtz"`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        single = np.asarray(values).astype(np.float32)
    kept = (single.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(single), _QUIET_NAN, kept)


def is_bfloat16(handle: Any) -> bool:
    """Whether an interpreter value holds bfloat16 patterns (a comparison's result keeps its operands' type in
    some Triton versions but holds booleans: not one)."""
    dtype = getattr(handle, "dtype", None)
    return getattr(dtype, "name", None) == _NAME and handle.data.dtype == np.uint16


def readable(value: Any) -> Any:
    """A block's values for printing: bfloat16 patterns as float32, anything else as it is."""
    handle = getattr(value, "handle", None)
    if handle is not None and is_bfloat16(handle):
        return widen(handle.data)
    data = getattr(handle, "data", None)
    return data if data is not None else value


# -- the builder's operations --------------------------------------------------------------------------------


def _handle(bits: np.ndarray, like: Any) -> Any:
    return _interp.TensorHandle(bits, like.dtype.scalar)


def _values(handle: Any) -> np.ndarray:
    return widen(handle.data) if is_bfloat16(handle) else handle.data


def _binary_op(original: Callable[..., Any]) -> Callable[..., Any]:
    def binary_op(lhs: Any, rhs: Any, op: Callable[..., Any]) -> Any:
        if not (is_bfloat16(lhs) or is_bfloat16(rhs)):
            return original(lhs, rhs, op)
        out = op(_values(lhs), _values(rhs))
        if out.dtype == np.bool_:  # a comparison
            return _interp.TensorHandle(out, tl.int1)
        return _handle(round_to_bfloat16(out), lhs)
    return binary_op


def _unary_op(original: Callable[..., Any]) -> Callable[..., Any]:
    def unary_op(arg: Any, op: Callable[..., Any]) -> Any:
        if not is_bfloat16(arg):
            return original(arg, op)
        return _handle(round_to_bfloat16(op(widen(arg.data))), arg)
    return unary_op


def _ternary_op(original: Callable[..., Any]) -> Callable[..., Any]:
    def ternary_op(lhs: Any, rhs: Any, other: Any, op: Callable[..., Any]) -> Any:
        if not (is_bfloat16(lhs) or is_bfloat16(rhs) or is_bfloat16(other)):
            return original(lhs, rhs, other, op)
        out = op(_values(lhs), _values(rhs), _values(other))
        return _handle(round_to_bfloat16(out), other) if is_bfloat16(other) else _handle(out, other)
    return ternary_op


def _fma(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_fma(x: Any, y: Any, z: Any) -> Any:
        if not is_bfloat16(z):
            return original(x, y, z)
        exact = _values(x).astype(np.float64) * _values(y) + _values(z)  # a bfloat16 product is exact here
        return _handle(round_to_bfloat16(exact), z)
    return create_fma


def _cast(original: Callable[..., Any]) -> Callable[..., Any]:
    def cast_impl(src: Any, dst_type: Any) -> Any:
        to_bfloat16 = dst_type.scalar.name == _NAME
        if not (to_bfloat16 or is_bfloat16(src)):
            return original(src, dst_type)
        values = _values(src)
        if to_bfloat16:
            return _interp.TensorHandle(round_to_bfloat16(values), dst_type.scalar)
        with np.errstate(invalid="ignore", over="ignore"):
            return _interp.TensorHandle(values.astype(_interp._get_np_dtype(dst_type)), dst_type.scalar)
    return cast_impl


def _fp_to_fp(original: Callable[..., Any], builder: Any) -> Callable[..., Any]:
    """Casts with a rounding mode given (`.to(tl.bfloat16, fp_downcast_rounding="rtz")`); fp8 ones are Triton's."""
    toward_zero = getattr(getattr(_interp._ir, "ROUNDING_MODE", None), "RTZ", None)

    def create_fp_to_fp(src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        names = (src.dtype.scalar.name, dst_type.scalar.name)
        if _NAME not in names or any(name.startswith("fp8") for name in names):
            return original(src, dst_type, rounding_mode)
        if dst_type.scalar.name == _NAME and rounding_mode is not None and rounding_mode == toward_zero:
            return _interp.TensorHandle(truncate_to_bfloat16(_values(src)), dst_type.scalar)
        return builder.cast_impl(src, dst_type)
    return create_fp_to_fp


def _dot(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_dot(a: Any, b: Any, d: Any, *rest: Any) -> Any:
        if not (is_bfloat16(a) or is_bfloat16(b)):
            return original(a, b, d, *rest)
        # Tensor cores multiply bfloat16 operands exactly and accumulate in float32 (the accumulator's type).
        product = np.matmul(_values(a), _values(b), dtype=d.data.dtype)
        return _interp.TensorHandle(product + d.data, d.dtype.scalar)
    return create_dot


def _atomic_rmw(original: Callable[..., Any]) -> Callable[..., Any]:
    """tl.atomic_add into bfloat16, which the interpreter refuses ("Unsupported data type") and a GPU runs:
    lane by lane, each sum rounded to bfloat16 (lanes that share an element each add); the old values are
    returned. Triton's front end refuses every other atomic on bfloat16."""
    def create_atomic_rmw(rmw_op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
        if not is_bfloat16(val) or str(rmw_op).rsplit(".", 1)[-1] not in ("FADD", "ADD"):
            return original(rmw_op, ptr, val, mask, *rest)
        addresses, values = np.broadcast_arrays(np.asarray(ptr.data, dtype=np.uint64), widen(val.data))
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
        old = np.zeros(addresses.shape, dtype=np.uint16)
        for lane in zip(*np.nonzero(active), strict=True):
            at, on = addresses[lane].reshape(1), np.ones(1, dtype=bool)
            old[lane] = _interp._interpreter.load(at, on, np.zeros(1, np.uint16), np.dtype(np.uint16))[0]
            _interp._interpreter.store(at, round_to_bfloat16(widen(old[lane]) + values[lane]).reshape(1), on)
        return _interp.TensorHandle(old, val.dtype.scalar)
    return create_atomic_rmw


def _get_bf16(value: float) -> Any:
    """A bfloat16 constant (`tl.full(..., 2.0, tl.bfloat16)`), which some interpreters have no method for."""
    return _interp.TensorHandle(round_to_bfloat16(np.array([value], dtype=np.float64)), tl.bfloat16)


def _print(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_print(prefix: Any, hex: Any, values: Any, *rest: Any) -> Any:  # noqa: A002 - Triton's name
        if not hex:
            values = [_interp.TensorHandle(widen(v.data), tl.float32) if is_bfloat16(v) else v for v in values]
        return original(prefix, hex, values, *rest)
    return create_print


def _tensor_text(original: Callable[..., Any]) -> Callable[..., Any]:
    """`print(x)` in an interpreted kernel: a block's values, bfloat16 ones as numbers (the interpreter shows
    the patterns). Set through the launch's own undo list where it has one (3.6 and later)."""
    def patch_lang_tensor(tensor: Any, *rest: Any) -> Any:
        done = original(tensor, *rest)
        scope = rest[0] if rest and hasattr(rest[0], "set_attr") else None
        for name, show in (("__repr__", repr), ("__str__", str)):
            def text(self: Any, show: Callable[[Any], str] = show) -> str:
                return show(readable(self))
            if scope is not None:
                scope.set_attr(tensor, name, text)
            else:  # Triton 3.5: the course's snapshot of the tensor class undoes it (compat.patch_lang)
                setattr(tensor, name, text)
        return done
    return patch_lang_tensor


_BUILDER_WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    # The shared helpers behind the builder's elementwise methods: fadd, fsub, fmul, frem, min/max, the float
    # comparisons, negation (3.9), select and clamp.
    "binary_op": _binary_op,
    "unary_op": _unary_op,
    "ternary_op": _ternary_op,
    "create_fma": _fma,
    # Behind create_fp_trunc, create_fp_ext, create_si_to_fp, create_fp_to_si and the rest of the casts.
    "cast_impl": _cast,
    "create_dot": _dot,
    "create_atomic_rmw": _atomic_rmw,
}


# -- reductions and scans ----------------------------------------------------------------------------------


_PER_THREAD = 8  # bfloat16 values a GPU thread holds along a row: 16 bytes, one vector load


def _sum_in_a_gpus_order(values: np.ndarray) -> np.ndarray:
    """Sums along the last axis in the order a GPU's reduction adds bfloat16, each partial sum rounded to
    bfloat16: each thread adds its 8 neighbouring values in turn, then the threads' sums combine by halves (the
    warp's shuffles). Measured on an H200: a 32 x 32 row sum matched it bit for bit (another layout can order it
    otherwise). -0.0 pads a ragged axis: adding it changes nothing, not even a zero's sign."""
    length = values.shape[-1]
    per_thread = min(_PER_THREAD, length)
    threads = 1 << max(0, -(-length // per_thread) - 1).bit_length()
    padding = threads * per_thread - length
    if padding:
        values = np.concatenate([values, np.full(values.shape[:-1] + (padding,), -0.0, values.dtype)], axis=-1)
    values = values.reshape(values.shape[:-1] + (threads, per_thread))
    total = values[..., 0]
    for i in range(1, per_thread):
        total = widen(round_to_bfloat16(total + values[..., i]))
    while total.shape[-1] > 1:
        half = total.shape[-1] // 2
        total = widen(round_to_bfloat16(total[..., :half] + total[..., half:]))
    return total[..., 0]


def _sum(original: Callable[..., Any]) -> Callable[..., Any]:
    def sum(self: Any, input: Any) -> Any:  # noqa: A001, A002 - Triton's names
        if not is_bfloat16(input.handle):
            return original(self, input)
        values = widen(input.handle.data)
        axis = self.axis
        if axis is None:
            total = _sum_in_a_gpus_order(values.reshape(1, -1))[0]
            bits = round_to_bfloat16(total).reshape((1,) * values.ndim if self.keep_dims else ())
        else:
            total = _sum_in_a_gpus_order(np.moveaxis(values, axis, -1))
            bits = round_to_bfloat16(np.expand_dims(total, axis) if self.keep_dims else total)
        return self.to_tensor(bits, input.dtype)
    return sum


def _min_max(original: Callable[..., Any]) -> Callable[..., Any]:
    def min_max(self: Any, input: Any, val_reduce_op: Any, idx_reduce_op: Any = None) -> Any:
        block = input[0] if isinstance(input, tuple) else input
        if not is_bfloat16(block.handle):
            return original(self, input, val_reduce_op, idx_reduce_op)
        widened = tl.core.tensor(_interp.TensorHandle(widen(block.handle.data), tl.float32),
                                 block.type.with_element_ty(tl.float32))
        found = original(self, widened, val_reduce_op, idx_reduce_op)

        def back(result: Any) -> Any:  # the value reduced, as bfloat16 again (exact: it is one of the inputs)
            if result is None or result.dtype != tl.float32:
                return result
            bits = round_to_bfloat16(result.handle.data)
            return self.to_tensor(bits if result.type.is_block() else bits.reshape(()), block.dtype)

        return tuple(back(r) for r in found) if isinstance(found, tuple) else back(found)
    return min_max


def _scan(original: Callable[..., Any], op: Callable[..., Any]) -> Callable[..., Any]:
    """cumsum and cumprod of bfloat16: each running value rounded to bfloat16, as a GPU's scan keeps it."""
    def scan(self: Any, input: Any) -> Any:  # noqa: A002 - Triton's name
        if not is_bfloat16(input.handle):
            return original(self, input)
        values = np.moveaxis(widen(input.handle.data), self.axis, 0)
        out = np.empty(values.shape, dtype=np.uint16)
        running = values[0]
        out[0] = round_to_bfloat16(running)
        for i in range(1, values.shape[0]):
            out[i] = round_to_bfloat16(op(widen(out[i - 1]), values[i]))
        return [self.to_tensor(np.moveaxis(out, 0, self.axis), input.dtype)]
    return scan


# -- installing them ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _attributes_replaced(replacements: list[tuple[Any, str, Any]]) -> Iterator[None]:
    saved = [(obj, name, obj.__dict__.get(name, _ABSENT)) for obj, name, _ in replacements]
    for obj, name, value in replacements:
        setattr(obj, name, value)
    try:
        yield
    finally:
        for obj, name, value in reversed(saved):
            if value is _ABSENT:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


_ABSENT = object()


def _replacements() -> list[tuple[Any, str, Any]]:
    """What to set where, on this Triton: the builder's methods on its one instance (as the access recorder
    wraps its loads and stores), the reductions on their classes. A name this Triton lacks is skipped;
    `interpreter_limit()` then tells by the results."""
    builder = getattr(_interp, "interpreter_builder", None)
    if builder is None:
        return []
    found: list[tuple[Any, str, Any]] = []
    for name, wrap in _BUILDER_WRAPPERS.items():
        if callable(getattr(builder, name, None)):
            found.append((builder, name, wrap(getattr(builder, name))))
    if callable(getattr(builder, "create_fp_to_fp", None)):
        found.append((builder, "create_fp_to_fp", _fp_to_fp(builder.create_fp_to_fp, builder)))
    printer = getattr(builder, "create_print", None)
    if callable(printer) and prints_values(printer):
        found.append((builder, "create_print", _print(printer)))
    found.append((builder, "get_bf16", _get_bf16))
    if callable(getattr(_interp, "_patch_lang_tensor", None)):
        found.append((_interp, "_patch_lang_tensor", _tensor_text(_interp._patch_lang_tensor)))
    reduce_ops, scan_ops = getattr(_interp, "ReduceOps", None), getattr(_interp, "ScanOps", None)
    if reduce_ops is not None and callable(getattr(reduce_ops, "sum", None)):
        found.append((reduce_ops, "sum", _sum(reduce_ops.sum)))
    if reduce_ops is not None and callable(getattr(reduce_ops, "min_max", None)):
        found.append((reduce_ops, "min_max", _min_max(reduce_ops.min_max)))
    for name, op in (("cumsum", np.add), ("cumprod", np.multiply)):
        if scan_ops is not None and callable(getattr(scan_ops, name, None)):
            found.append((scan_ops, name, _scan(getattr(scan_ops, name), op)))
    return found


_active = False


@contextlib.contextmanager
def as_on_a_gpu() -> Iterator[None]:
    """For the duration, the interpreter computes bfloat16 as a GPU does (see the module's docstring); undone
    afterwards. Within another one, nothing more is done."""
    global _active
    if _active:
        yield
        return
    _active = True
    try:
        with _attributes_replaced(_replacements()):
            yield
    finally:
        _active = False


# -- whether it worked --------------------------------------------------------------------------------------


def _block(values: list[float], shape: tuple[int, ...], dtype: Any = tl.bfloat16) -> Any:
    data = np.array(values, dtype=np.float32).reshape(shape)
    handle = _interp.TensorHandle(round_to_bfloat16(data) if dtype is tl.bfloat16 else data, dtype)
    return tl.core.tensor(handle, tl.block_type(dtype, list(shape)))


def _computes_right() -> bool:
    """Whether the interpreter's builder, with the fixes in, gives a GPU's bfloat16 results: a sum, a cast
    from float32 at a tie and past it, a product of tiles into float32, a comparison, a reduction."""
    builder = _interp.interpreter_builder
    a, b = _block([1.5, -2.0], (1, 2)), _block([0.75, 3.0], (2, 1))
    wide = _block([1.00390625, 1.01171875], (2,), tl.float32)  # a tie (to 1.0) and past one (to 1.015625)
    checks = [
        (widen(builder.create_fadd(a.handle, a.handle).data), [[3.0, -4.0]]),
        (widen(builder.create_fp_trunc(wide.handle, tl.bfloat16).data), [1.0, 1.015625]),
        (builder.create_dot(a.handle, b.handle, _block([0.5], (1, 1), tl.float32).handle, None, 0).data,
         [[0.5 + 1.125 - 6.0]]),
        (builder.create_fcmpOLT(a.handle, a.handle).data, [[False, False]]),
        (widen(_interp.ReduceOps(1, tl.standard._sum_combine, False).apply(a).handle.data), [-0.5]),
    ]
    return all(np.array_equal(np.asarray(got), np.array(want)) for got, want in checks)


@functools.lru_cache(maxsize=1)
def interpreter_limit() -> str | None:
    """None when this Triton's interpreter, with the course's fixes, computes bfloat16 as a GPU does; else the
    sentence that names the interpreter as the cause of wrong bfloat16 values."""
    try:
        with as_on_a_gpu(), np.errstate(all="ignore"):
            right = _computes_right()
    except Exception:  # noqa: BLE001 - an interpreter of another shape: its limit is named below
        right = False
    if right:
        return None
    return (f"this kernel computes in bfloat16, which Triton {triton.__version__}'s CPU interpreter gets wrong "
            "(it keeps bfloat16 as raw 16-bit patterns: tl.dot multiplies the patterns, casts truncate) and which "
            "the grader could not correct on this version: the wrong values may be the interpreter's, not "
            "yours. Check it on a GPU, or with float16 tiles, which the interpreter computes exactly")
