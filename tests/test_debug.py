"""The debugging helpers learners use inside interpreted kernels."""

from __future__ import annotations

import pytest
import torch

from puzzles import check_tensors


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


def test_breakpoint_if_stops_only_in_the_chosen_program(load_kernel, monkeypatch):
    import pdb

    stops = []
    monkeypatch.setattr(pdb.Pdb, "set_trace", lambda self, frame=None: stops.append(frame.f_lineno))
    kernel = load_kernel("""
from puzzles import breakpoint_if

@triton.jit
def k(z_ptr, B0: tl.constexpr):
    breakpoint_if(pid_0=2)
""", "k")
    kernel[(4,)](torch.zeros(4), B0=4)
    assert len(stops) == 1


def test_check_tensors():
    check_tensors(torch.zeros(3, 4), torch.zeros(2), device="cpu")
    with pytest.raises(ValueError, match="not contiguous"):
        check_tensors(torch.zeros(3, 4).t())
    with pytest.raises(ValueError, match="expected cuda"):
        check_tensors(torch.zeros(3), device="cuda")
    with pytest.raises(TypeError):
        check_tensors([1, 2])
