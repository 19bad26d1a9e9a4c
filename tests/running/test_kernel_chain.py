"""The one walk of a kernel's decorator chain (puzzles/running/kernel_chain.py), which the `KernelHandle`, the GPU
worker's shipping and the kernel's description all read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import triton
import triton.language as tl

from puzzles.running.kernel import ConfigLaunch, KernelHandle, autotuner_of, unwrap_kernel
from puzzles.running.kernel_chain import walk_chain

CONFIGS = [triton.Config({"B0": 32}, num_warps=1), triton.Config({"B0": 64}, num_warps=2)]


@triton.jit
def plain(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pass


def python_function(x):
    return x


def test_a_plain_kernel_is_its_own_chain():
    chain = walk_chain(plain)
    assert chain.links == chain.decorators == (plain,) and chain.jitted is plain
    assert chain.fn is unwrap_kernel(plain) and chain.fn.__name__ == "plain"
    assert chain.autotuner is None and chain.heuristics == () and chain.supplied == frozenset()


def test_heuristics_over_autotune_walks_down_to_the_function():
    tuned = triton.autotune(configs=CONFIGS, key=["N0"])(triton.jit(plain.fn))
    kernel = triton.heuristics({"EVEN": lambda args: True})(tuned)
    chain = walk_chain(kernel)
    assert chain.links[:2] == (kernel, tuned) and chain.fn is plain.fn
    assert chain.autotuner is tuned is autotuner_of(kernel) and chain.heuristics == (kernel,)
    assert chain.supplied == {"EVEN", "B0"}


def test_a_config_launch_is_one_config_of_the_kernel_it_came_from():
    tuned = triton.autotune(configs=CONFIGS, key=["N0"])(triton.jit(plain.fn))
    launch = ConfigLaunch(tuned.fn, CONFIGS[1], tuned)
    chain = walk_chain(launch)
    assert chain.config_launch is launch and chain.autotuner is None and chain.fn is plain.fn
    assert chain.links == (launch, tuned.fn) and chain.decorators == (tuned, tuned.fn)
    assert chain.supplied == {"B0"}  # the autotuner above it supplies B0
    handle = KernelHandle.of(tuned)
    one = handle.for_launch(launch)  # nothing walked again: the links below the autotuner are the kernel's
    assert one.chain.links == chain.links and one.chain.decorators is handle.chain.decorators


def test_anything_else_has_no_function():
    for value in (python_function, 3, None, KernelHandle):
        assert walk_chain(value).fn is None and walk_chain(value).jitted is None


def test_the_walk_imports_only_the_standard_library():
    """kernel_source.py, which the compile check's workers load by path (no torch, no `puzzles`), walks with it."""
    path = Path(__file__).parents[2] / "puzzles" / "running" / "kernel_chain.py"
    code = (f"import importlib.util, sys; s = importlib.util.spec_from_file_location('chain', {str(path)!r}); "
            "m = importlib.util.module_from_spec(s); sys.modules['chain'] = m; s.loader.exec_module(m); "
            "assert not {'torch', 'triton', 'puzzles'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
