"""Launching a compiled Triton kernel for a fraction of the CPU time of ``kernel[grid](...)``.

A call of a @triton.jit function from Python costs tens of us of CPU (binding the arguments,
specialisation keys, the cache lookup), more than a small GEMV takes on the GPU. gptq_matmul
therefore builds a launch plan once per (M, A's strides and alignment, device, options) and keeps
it on the weight (:mod:`solutions.gptq.plans`): the config, the grid, every argument but A and C, and
the compiled kernel, which later calls launch through :class:`Launch` the way JITFunction.run does
(same launcher, same enter/exit hooks), minus the parts that cost CPU and do nothing here
(benchmarks/gptq/experiments/host_breakdown.py measures each piece):

* Pointers go to the launcher as ints. Given a tensor, Triton's launcher calls its data_ptr() and
  asks the driver (cuPointerGetAttribute) for the device address, for every pointer on every call.
* Triton 3.6 keeps its launch hooks in HookChain objects that are never None, so JITFunction.run
  builds the launch metadata and calls two empty hook chains on every launch. With no hook
  registered the plan passes None (no metadata, no calls); with one registered, everything is
  passed as JITFunction.run passes it.
* On Triton 3.6 the generated C launcher is called directly: CudaLauncher.__call__ only adds a
  closure and two scratch allocations, which our kernels (no scratch memory) do not need.
* Split-K with atomics needs C zeroed: in eager mode one driver memset (:func:`driver_memset`,
  cuMemsetD32Async) on the launch stream instead of torch's fill kernel (new_zeros): 1-3 us less CPU
  per call on the H100 host. Under CUDA-graph capture, where CPU time is not replayed, torch's fill
  kernel stays: as a graph node it measured as fast as the memset node or up to 0.1 us faster
  (results/h100_host/host_breakdown.md).
"""

from __future__ import annotations

import ctypes
import inspect
from collections.abc import Callable

import triton
from torch import Tensor
from triton import knobs
from triton.runtime import driver

_DRIVER_MEMSET: list = []  # [cuMemsetD32Async through ctypes], or [None] where libcuda cannot be loaded


def driver_memset() -> Callable[[int, int, int, int], int] | None:
    """cuMemsetD32Async from the CUDA driver, ``f(ptr, value, count, stream) -> status`` (0 = success),
    or None where libcuda cannot be loaded."""
    if not _DRIVER_MEMSET:
        try:
            fn = ctypes.CDLL("libcuda.so.1").cuMemsetD32Async
            fn.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            _DRIVER_MEMSET.append(fn)
        except (OSError, AttributeError):
            _DRIVER_MEMSET.append(None)
    return _DRIVER_MEMSET[0]


def hook_set(hook: object) -> bool:
    """Whether a launch hook would do anything: None and an empty HookChain (Triton 3.6) do not."""
    return bool(getattr(hook, "calls", hook))


class Launch:
    """One Triton kernel with every argument fixed except those at ``dynamic`` positions.

    The first call goes through ``JITFunction.run`` (compiling if needed) and keeps the compiled
    kernel; later calls go to ``fast``, which takes the stream and the dynamic arguments (in position
    order, tensors or ints holding their addresses) and hands them to the kernel's launcher. Under the
    interpreter, or where the kernel has pre-run hooks, every call takes the ordinary path.
    """

    def __init__(self, fn, grid: tuple[int, ...], args: list, kwargs: dict, options: dict):
        self.fn, self.grid, self.kwargs, self.options = fn, grid, kwargs, options
        sig = inspect.signature(fn.fn)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        self.args = list(bound.arguments.values())  # every parameter, constexprs included, in order
        self.n_positional = len(args)
        self.compiled = None
        self.fast = None
        self.direct = False  # whether fast calls Triton 3.6's generated C launcher itself

    def __call__(self, *dynamic: tuple[int, object]) -> None:
        if self.fast is not None:
            self.fast(driver.active.get_current_stream(self.device), *(v for _, v in sorted(dynamic, key=_first)))
            return
        args = self.args.copy()
        for i, value in dynamic:
            args[i] = value
        compiled = self.fn[self.grid](*args[: self.n_positional], **self.kwargs, **self.options)
        if compiled is not None and not getattr(self.fn, "pre_run_hooks", None) and hasattr(compiled, "run"):
            compiled._init_handles()
            self.compiled = compiled
            self.device = driver.active.get_current_device()
            self.fast = self._make_fast(sorted(i for i, _ in dynamic))

    def _make_fast(self, dynamic: list[int]):
        """A launcher taking the stream and the dynamic arguments (in position order)."""
        compiled, run, function, packed = self.compiled, self.compiled.run, self.compiled.function, \
            self.compiled.packed_metadata
        runtime = knobs.runtime
        g = self.grid
        g0, g1, g2 = g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1
        grid = (g0, g1, g2)
        # The plan's own tensors (weights, scales: kept alive by self.args) go in as addresses.
        static = [a.data_ptr() if isinstance(a, Tensor) else a for a in self.args]
        direct = _direct_launcher(run)
        self.direct = direct is not None

        def hooked(stream, full):
            enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
            metadata = compiled.launch_metadata(grid, stream, *full)
            run(g0, g1, g2, stream, function, packed, metadata, enter, leave, *full)

        if len(dynamic) == 2:
            i, j = dynamic
            pre, mid, post = tuple(static[:i]), tuple(static[i + 1:j]), tuple(static[j + 1:])
            if direct is not None:
                launch, coop, pdl = direct

                def fast(stream, first, second):
                    if hook_set(runtime.launch_enter_hook) or hook_set(runtime.launch_exit_hook):
                        return hooked(stream, (*pre, first, *mid, second, *post))
                    launch(g0, g1, g2, stream, function, coop, pdl, None, None, packed, None, None, None,
                           *pre, first, *mid, second, *post)
            else:
                def fast(stream, first, second):
                    if hook_set(runtime.launch_enter_hook) or hook_set(runtime.launch_exit_hook):
                        return hooked(stream, (*pre, first, *mid, second, *post))
                    run(g0, g1, g2, stream, function, packed, None, None, None, *pre, first, *mid, second, *post)
            return fast

        def general(stream, *values):
            full = list(static)
            for i, v in zip(dynamic, values, strict=True):
                full[i] = v
            if hook_set(runtime.launch_enter_hook) or hook_set(runtime.launch_exit_hook):
                return hooked(stream, full)
            run(g0, g1, g2, stream, function, packed, None, None, None, *full)
        return general


def _first(item: tuple) -> int:
    return item[0]


def _direct_launcher(run) -> tuple | None:
    """(launch, cooperative, pdl) of Triton 3.6's CudaLauncher where calling its C ``launch`` directly is
    what ``run`` would do (no scratch memory, one CTA per program, no tensor descriptors); else None."""
    launch = getattr(run, "launch", None)
    if not (triton.__version__.startswith("3.6.") and type(run).__name__ == "CudaLauncher"
            and launch is not None and type(launch).__name__ != "function" and not hasattr(run, "arg_annotations")
            and getattr(run, "global_scratch_size", 1) == 0 and getattr(run, "profile_scratch_size", 1) == 0
            and getattr(run, "num_ctas", 1) == 1):
        return None
    return launch, run.launch_cooperative_grid, run.launch_pdl

