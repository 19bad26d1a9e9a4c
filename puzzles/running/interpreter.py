"""Launching a kernel under Triton's interpreter with every access recorded and guarded.
"""

from __future__ import annotations

import bdb
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter as _interp
from triton.runtime.jit import JITFunction

from puzzles.running import bfloat16, compat, interpreter_hooks
from puzzles.running.errors import KernelError, error_from_exception, timeout_message
from puzzles.running.kernel import unwrap_kernel
from puzzles.running.limits import KernelTimeout
from puzzles.running.recording import Recorder, Trace


@dataclass
class RunOutput:
    """What one launch produced."""

    output: torch.Tensor | None = None
    trace: Trace | None = None
    error: KernelError | None = None
    stdout: str = ""
    seconds: float = 0.0
    guard_violations: list[str] = field(default_factory=list)


def interpreted(kernel: Any) -> _interp.InterpretedFunction:
    """The kernel as Triton's interpreter runs it, whatever mode it was decorated in."""
    if isinstance(kernel, _interp.InterpretedFunction):
        return kernel
    return _interp.InterpretedFunction(unwrap_kernel(kernel))  # a KernelHandle's function, already resolved


def rewrite_before_forking(kernel: Any) -> None:
    """Triton's interpreter rewrites the syntax tree of a kernel, and of each @triton.jit helper it calls, on
    its first call in a process and keeps the result (`InterpretedFunction.rewritten_fn`, by function). Run in
    a forked child, that work went with the child: a kernel graded again (another seed, each config of an
    autotuned kernel, another test) paid it every time, about a tenth of a small kernel's grading. Done here,
    in the process that forks, its children find it done. Not for a notebook's kernel (globals of `__main__`):
    the rewrite copies names of the interpreter's module into the function's globals, which there are the
    learner's own; nor where this Triton has no such cache."""
    cache = getattr(_interp.InterpretedFunction, "rewritten_fn", None)
    rewriter = getattr(_interp, "FunctionRewriter", None)
    if not isinstance(cache, dict) or rewriter is None:
        return
    todo, seen = [unwrap_kernel(kernel)], set()
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen or not hasattr(fn, "__code__") or fn.__globals__.get("__name__") == "__main__":
            continue
        seen.add(fn)
        if fn not in cache:
            try:
                cache[fn] = rewriter(fn).rewrite_ast()
            except Exception:  # noqa: BLE001 - the child meets it again and reports it where it happens
                continue
        todo += [helper.fn for name in fn.__code__.co_names
                 if isinstance(helper := fn.__globals__.get(name), (JITFunction, _interp.InterpretedFunction))]


@contextlib.contextmanager
def _interpret_nested_jit() -> Iterator[None]:
    """Let a kernel compiled for the GPU call its @triton.jit helpers under the interpreter."""
    original = JITFunction.__call__

    def call(self, *args, **kwargs):
        return _interp.InterpretedFunction(self.fn)(*args, **kwargs)

    JITFunction.__call__ = call
    try:
        yield
    finally:
        JITFunction.__call__ = original


class _LaunchPatches:
    """The launch's own language patches plus those of the nested @jit calls it made, undone
    together, nested ones first (each recorded the values the one before it had set)."""

    def __init__(self, outer: Any) -> None:
        self.outer = outer
        self.nested: list[Any] = []

    def restore(self) -> None:
        while self.nested:
            self.nested.pop().restore()
        self.outer.restore()


@contextlib.contextmanager
def _patch_language_once() -> Iterator[None]:
    """Within one launch, patch Triton's language for each module once, and undo all of it.

    The interpreter patches `triton.language` again each time a nested @jit function runs (every
    `tl.sum` is one) and never undoes those nested patches, which leave `triton.language.core`
    pointing at the interpreter: harmless when everything is interpreted, but the next kernel
    compiled for a GPU in this process then fails. Patching once per module is also much faster.
    """
    name = interpreter_hooks.require().patch_lang  # `_patch_lang` on every Triton so far
    original = getattr(_interp, name)
    done: dict[int, Any] = {}
    launch: list[_LaunchPatches] = []

    def patch_once(fn):
        key = id(getattr(fn, "__globals__", fn))
        if key not in done:
            scope = compat.patch_lang(original, fn)  # a scope to undo it, on every supported Triton
            if not launch:  # the launch's own scope: the grid executor restores it at the end
                launch.append(_LaunchPatches(scope))
                scope = launch[0]
            else:
                launch[0].nested.append(scope)
            done[key] = scope
        return done[key]

    setattr(_interp, name, patch_once)
    try:
        yield
    finally:
        setattr(_interp, name, original)
        if launch:
            launch[0].restore()  # again, in case the launch stopped before its own restore


@contextlib.contextmanager
def _memoized_np_dtypes() -> Iterator[None]:
    """Within one launch, answer the interpreter's `_get_np_dtype` from a table: it rebuilds a dict of
    twenty dtypes on every call, once per operation of the kernel (about a tenth of an interpreted
    kernel's time). A dtype maps to the same numpy dtype every time; where a Triton has no such
    function, nothing is patched."""
    original = getattr(_interp, "_get_np_dtype", None)
    if original is None:
        yield
        return
    table: dict[tuple, Any] = {}

    def get_np_dtype(tt_dtype: Any) -> Any:
        # By the type's name (a pointer type cannot be hashed): a name is one scalar type or pointer.
        key = (type(tt_dtype), getattr(tt_dtype, "name", None))
        try:
            return table[key]
        except KeyError:
            found = original(tt_dtype)
            if key[1] is not None:
                table[key] = found
            return found

    _interp._get_np_dtype = get_np_dtype
    try:
        yield
    finally:
        _interp._get_np_dtype = original


@contextlib.contextmanager
def _constructor_replaced(cls: Any, make_init: Callable[[Callable[..., None]], Callable[..., None]]) -> Iterator[None]:
    """`cls.__init__` replaced by `make_init(original)` for the duration (nothing where this Triton has no such
    class): the memos below build their tables within one launch."""
    if cls is None:
        yield
        return
    original = cls.__init__
    cls.__init__ = make_init(original)
    try:
        yield
    finally:
        cls.__init__ = original


def memoized_block_types() -> contextlib.AbstractContextManager[None]:
    """Within one launch, give a block type the attributes computed for the first one of the same element
    type and shape: the interpreter builds one per operation of every program, unwrapping, validating and
    naming its shape each time (about an eighth of an interpreted split-K grading's time). Those attributes are
    immutable values (the shape tuple, its element count, its name), so each block type stays an object
    of its own; whatever a Triton's constructor sets is what is kept. An element type without a name or a
    shape that cannot be a key (an unhashable entry) is built as Triton builds it."""

    def make_init(original: Callable[..., None]) -> Callable[..., None]:
        table: dict[tuple, dict[str, Any]] = {}

        def init(self: Any, element_ty: Any, shape: Any) -> None:
            try:
                # By the element type's name: a pointer type cannot be hashed (it compares by value, hashes by none).
                key = (type(element_ty), element_ty.name, *shape)
                found = table.get(key)
            except (TypeError, AttributeError):
                key = found = None
            if found is None:
                original(self, element_ty, shape)
                if key is not None:
                    table[key] = {k: v for k, v in vars(self).items() if k != "element_ty"}
                return
            self.__dict__.update(found)
            self.element_ty = element_ty

        return init

    return _constructor_replaced(getattr(tl.core, "block_type", None), make_init)


def memoized_tensor_shapes() -> contextlib.AbstractContextManager[None]:
    """Within one launch, give a tensor the shape attributes computed for the first tensor of the same
    shape: Triton's `tl.tensor` constructor builds its element count and a tuple of constexprs of its shape
    for every value of every operation of every program (about a seventh of an interpreted grading's time).
    What is kept is what Triton's constructor set besides the handle, the type and the element type, which
    are each tensor's own; a type without a name is built as Triton builds it."""
    own = ("handle", "type", "dtype")

    def make_init(original: Callable[..., None]) -> Callable[..., None]:
        table: dict[str, dict[str, Any]] = {}

        def init(self: Any, handle: Any, type: Any) -> None:  # noqa: A002 - Triton's parameter name
            # A block type's name holds its shape (its shape is Triton's own tuple, hashed by identity); a
            # scalar's shape is ().
            key = getattr(type, "name", None) if type.is_block() else ""
            found = table.get(key) if isinstance(key, str) else None
            if found is None:
                original(self, handle, type)
                if isinstance(key, str):
                    table[key] = {k: v for k, v in vars(self).items() if k not in own}
                return
            self.__dict__.update(found)
            self.handle = handle
            self.type = type
            self.dtype = type.scalar

        return init

    return _constructor_replaced(getattr(tl.core, "tensor", None), make_init)


_memos_on = False  # a launch_memos() in progress: a launch within it (graded under the tests' fixture) adds none


@contextlib.contextmanager
def launch_memos() -> Iterator[None]:
    """For one launch: the language patched once per module (and undone), the memos above, and bfloat16
    computed as on a GPU (puzzles/running/bfloat16.py)."""
    global _memos_on
    if _memos_on:
        yield
        return
    _memos_on = True
    try:
        with (_patch_language_once(), _memoized_np_dtypes(), memoized_block_types(), memoized_tensor_shapes(),
              compat.descriptor_strides_in_bytes(), bfloat16.as_on_a_gpu()):
            yield
    finally:
        _memos_on = False


@contextlib.contextmanager
def memoized_plain_launches() -> Iterator[None]:
    """For the duration, every launch of Triton's interpreter (a kernel called directly, not graded: the tests
    of the course's production kernels) runs with `launch_memos()`, as grading's launches do; nothing is
    recorded or guarded. Where this Triton has no grid executor, nothing changes."""
    executor = getattr(_interp, "GridExecutor", None)
    if executor is None:
        yield
        return
    original = executor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with launch_memos():
            return original(self, *args, **kwargs)

    executor.__call__ = call
    try:
        yield
    finally:
        executor.__call__ = original


def launch_interpreted(kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any],
                       recorder: Recorder) -> KernelError | None:
    """Run under the interpreter with every access checked; return the error, if any."""
    fn = interpreted(kernel)
    try:
        # Masked-off lanes legitimately compute things like -inf - -inf: no numpy warnings.
        with _interpret_nested_jit(), launch_memos(), recorder, np.errstate(all="ignore"):
            fn[grid](*args, **kwargs)
    except KernelTimeout as exc:
        stopped = error_from_exception(exc, kernel)  # the line the kernel was on
        return KernelError("timeout", timeout_message(0), stopped.line, stopped.source, stopped.filename)
    except Exception as exc:  # a learner's kernel can raise anything
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, bdb.BdbQuit):
            cause = cause.__cause__
        if cause is not None:
            return KernelError("exception", "the kernel stopped in the debugger and the debugger quit. In test()'s "
                               "child process it cannot read what you type: grade with test(..., isolate=False) "
                               "to debug")
        return error_from_exception(exc, kernel)
    return None


@triton.jit
def _warm_up_kernel(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)


_interpreter_warm = False


def warm_interpreter() -> None:
    """Load, once in this process, what Triton's interpreter loads on its first launch (its argument
    specialisation imports modules lazily: about 0.1 s here, more on a GPU host), so that every forked
    child starts warm instead of paying it again: a launch of the course's own one-element kernel, on a
    CPU tensor (on a GPU machine too: the interpreter touches no CUDA, and the access checks' children
    run interpreted)."""
    global _interpreter_warm
    if _interpreter_warm:
        return
    _interpreter_warm = True
    with contextlib.suppress(Exception), _interpret_nested_jit(), _patch_language_once(), np.errstate(all="ignore"):
        interpreted(_warm_up_kernel)[(1,)](torch.zeros(1))

