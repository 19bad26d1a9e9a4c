"""The debugging helpers learners use inside kernels, interpreted and compiled for a GPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

from puzzles import check_tensors, test
from puzzles.running import debug
from puzzles.running import interpreter as execution

interpreted_only = pytest.mark.interpreter("the interpreter's own output format")


@interpreted_only
def test_print_if_prints_only_the_chosen_program(load_kernel, capsys):
    kernel = load_kernel("""
from puzzles import print_if

@triton.jit
def k(z_ptr, B0: tl.constexpr):
    pid = tl.program_id(0)
    print_if("block", tl.arange(0, B0) + pid * B0, pid_0=[1])
""", "k")
    kernel[(3,)](torch.zeros(12), B0=4)
    out = capsys.readouterr().out
    assert out.count("program (1, 0, 0): block [4 5 6 7]") == 1 and "(0, 0, 0)" not in out


@interpreted_only
def test_breakpoint_if_stops_only_in_the_chosen_program(load_kernel, monkeypatch):
    import pdb

    stops = []
    monkeypatch.setattr(pdb.Pdb, "set_trace", lambda self, frame=None: stops.append(frame.f_code.co_name))
    kernel = load_kernel("""
from puzzles import breakpoint_if

@triton.jit
def k(z_ptr, B0: tl.constexpr):
    breakpoint_if(pid_0=2)
""", "k")
    kernel[(4,)](torch.zeros(4), B0=4)
    assert stops == ["k"]  # once, in the kernel's own frame


def test_check_tensors():
    check_tensors(torch.zeros(3, 4), torch.zeros(2), device="cpu")
    with pytest.raises(ValueError, match="not contiguous"):
        check_tensors(torch.zeros(3, 4).t())
    with pytest.raises(ValueError, match="expected cuda"):
        check_tensors(torch.zeros(3), device="cuda")
    with pytest.raises(TypeError):
        check_tensors([1, 2])


# -- print_if and breakpoint_if in both modes ------------------------------------------------------------

_HELPERS = """
from puzzles import breakpoint_if, print_if

@triton.jit
def k(z_ptr, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    print_if("two", offsets, offsets * 2, pid_0=(0, 2))
    print_if("here", pid_0=1)
"""


@interpreted_only
def test_print_if_takes_several_values_and_an_int_or_a_tuple_of_programs(load_kernel, capsys):
    load_kernel(_HELPERS, "k")[(3,)](torch.zeros(12), B0=4)
    out = capsys.readouterr().out.splitlines()
    assert out == ["program (0, 0, 0): two [0 1 2 3] [0 2 4 6]", "program (1, 0, 0): here",
                   "program (2, 0, 0): two [ 8  9 10 11] [16 18 20 22]"]


def test_breakpoint_if_does_not_stop_when_kernels_are_compiled(load_kernel, monkeypatch):
    """On a GPU the grader's access check re-runs the kernel interpreted: it must not stop there."""
    import pdb

    stops = []
    monkeypatch.setattr(pdb.Pdb, "set_trace", lambda self, frame=None: stops.append(frame))
    monkeypatch.setattr(debug, "_compiling_for_a_gpu", lambda: True)
    kernel = load_kernel("from puzzles import breakpoint_if\n\n@triton.jit\ndef k(z_ptr):\n    breakpoint_if()\n", "k")
    execution.interpreted(kernel)[(2,)](torch.zeros(4))
    assert stops == []


_COMPILE_FOR_SM90 = """
import os, sys
os.environ["TRITON_INTERPRET"] = "0"  # compile, whatever this machine has
sys.path.insert(0, {tests!r})
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import p02_constant_add_block as p02

kernel = p02.add_mask2_kernel_debugging
src = ASTSource(kernel, {{"x_ptr": "*fp32", "z_ptr": "*fp32", "N0": "i32", "B0": "constexpr"}}, {{"B0": 32}})
print(triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ttir"])
"""


def test_print_if_compiles_for_sm_90_into_a_print_under_a_program_id_test():
    """Compiled ahead of time (no GPU needed): print_if is a tl.device_print inside an `if` on the
    program id, and breakpoint_if leaves nothing behind."""
    from conftest import KERNELS

    proc = subprocess.run([sys.executable, "-c", _COMPILE_FOR_SM90.format(tests=str(KERNELS))], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PUZZLES_COMPILE_CHECK": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    ttir = proc.stdout
    test_and_print = re.search(r"(%\S+) = arith\.cmpi eq, (%\S+), %\S+ : i32.*?"
                               r"scf\.if \1 \{\s*tt\.print \" offsets: \"", ttir, re.S)
    assert test_and_print, ttir
    assert re.search(rf"{re.escape(test_and_print.group(2))} = tt\.get_program_id x", ttir), ttir
    assert ttir.count("tt.print") == 1  # and nothing from breakpoint_if


@pytest.mark.interpreter("the ahead-of-time compile check runs only without a GPU")
def test_the_compile_check_compiles_print_if_rather_than_skipping_it(load_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("PUZZLES_COMPILE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PUZZLES_COMPILE_CHECK", raising=False)
    kernel = load_kernel("""
from puzzles import print_if

@triton.jit
def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    print_if("five values", offsets, offsets, offsets, offsets, offsets, pid_0=[1])
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)
""", "add_mask2_kernel")
    result = test(kernel, puzzle=2, quiet=True, compile_check="full")
    failure = result.first_failure
    # The interpreter prints any number of values; compiled, print_if takes four at most.
    assert failure is not None and failure.status == "compile error", str(result)
    assert "print_if(" in failure.error.source and "at most four values" in failure.error.message, failure.error


def test_calls_breakpoint_if_finds_it_in_the_kernel_or_a_helper(load_kernel):
    assert debug.calls_breakpoint_if(load_kernel(_HELPERS, "k")) is False
    source = "from puzzles import breakpoint_if\n\n@triton.jit\ndef k(z):\n    breakpoint_if(pid_0=[2])\n"
    direct = load_kernel(source, "k")
    assert debug.calls_breakpoint_if(direct)
    via_helper = load_kernel("""
import puzzles

@triton.jit
def helper(x):
    puzzles.breakpoint_if()
    return x

@triton.jit
def k(z_ptr):
    helper(1)
""", "k")
    assert debug.calls_breakpoint_if(via_helper)
    via_name = load_kernel("""
from puzzles import breakpoint_if as stop

@triton.jit
def helper(x):
    stop()
    return x

@triton.jit
def k(z_ptr):
    helper(1)
""", "k")
    assert debug.calls_breakpoint_if(via_name)


# -- on a GPU ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_on_a_gpu_breakpoint_if_runs_and_the_verdict_says_how_to_step_through():
    import p02_constant_add_block as p02

    result = test(p02.add_mask2_kernel_debugging, puzzle=2, quiet=True)
    assert result.passed, str(result)
    assert debug.STEP_THROUGH_ADVICE in result.notes and 'TRITON_INTERPRET"] = "1"' in str(result)


_PRINT_ON_GPU = """
import sys
sys.path.insert(0, {tests!r})
import torch
import p02_constant_add_block as p02

x = torch.arange(128, dtype=torch.float32, device="cuda")
p02.add_mask2_kernel_debugging[(4,)](x, torch.empty_like(x), 128, B0=32)
torch.cuda.synchronize()
"""


@pytest.mark.gpu
def test_on_a_gpu_print_if_prints_from_the_chosen_program_only():
    from conftest import KERNELS

    proc = subprocess.run([sys.executable, "-c", _PRINT_ON_GPU.format(tests=str(KERNELS))], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if "offsets" in line]
    assert lines and all(line.startswith("pid (1, 0, 0)") for line in lines), proc.stdout[-3000:]
    # Each element of program 1's block (on an H100 each came 4 times: the 32-element block is held
    # by each of the 4 warps, and every thread holding an element prints it).
    assert {int(line.rsplit(":", 1)[1]) for line in lines} == set(range(32, 64))
