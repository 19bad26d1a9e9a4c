"""Speed on a GPU: time a kernel, and compare it with what this device can do.

The ceilings are measured once per device and cached (a large device-to-device copy for memory
bandwidth, counting bytes read plus bytes written; a large fp16 matmul for the matrix rate),
because datasheet numbers are not what a kernel can reach. A kernel's floor is the larger of
(fewest bytes it must move / bandwidth) and (FLOPs / matrix rate); its fraction of the roofline
is that floor over its measured time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triton-puzzles" / "device_limits.json"


@dataclass
class DeviceLimits:
    device: str
    copy_gbps: float  # bytes read + written per second, in GB/s
    matmul_tflops: float  # dense fp16 matmul, TFLOP/s


@dataclass
class PerfReport:
    sizes: dict[str, int]
    ms: float  # median
    torch_ms: float | None
    bytes_moved: int  # fewest bytes the problem needs
    flops: int
    limits: DeviceLimits

    @property
    def gbps(self) -> float:
        return self.bytes_moved / self.ms / 1e6

    @property
    def tflops(self) -> float:
        return self.flops / self.ms / 1e9

    @property
    def floor_ms(self) -> float:
        memory = self.bytes_moved / (self.limits.copy_gbps * 1e6)
        compute = self.flops / (self.limits.matmul_tflops * 1e9) if self.flops else 0.0
        return max(memory, compute)

    @property
    def roofline_fraction(self) -> float:
        return self.floor_ms / self.ms

    def text(self) -> str:
        size = " ".join(f"{k}={v}" for k, v in self.sizes.items())
        parts = [f"speed at {size}: {self.ms * 1000:.1f} us, {self.gbps:.0f} GB/s"]
        if self.flops:
            parts.append(f"{self.tflops:.1f} TFLOP/s")
        parts.append(f"{self.roofline_fraction:.0%} of this {self.limits.device}'s roofline "
                     f"(floor {self.floor_ms * 1000:.1f} us)")
        if self.torch_ms is not None:
            parts.append(f"torch (the spec): {self.torch_ms * 1000:.1f} us")
        return "; ".join(parts)


def _scaled(value: float, units: tuple[str, ...]) -> str:
    """Three significant figures in the largest unit (steps of 1000) that keeps the number >= 1."""
    i = 0
    while i + 1 < len(units) and abs(value) >= 1000:
        value, i = value / 1000, i + 1
    return f"{value:.0f} {units[i]}" if i == 0 or value >= 100 else f"{value:.3g} {units[i]}"


def fmt_bytes(n: float) -> str:
    """Bytes a learner can read: 512 B, 4.1 KB, 33.6 MB (a small puzzle moves KB, never "0 MB")."""
    return _scaled(n, ("B", "KB", "MB", "GB", "TB"))


def fmt_flops(n: float) -> str:
    """Floating-point operations: 131 kFLOP, 2.1 MFLOP, 68.7 GFLOP (never "0 GFLOP")."""
    return _scaled(n, ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"))


def bench(fn: Callable[[], Any]) -> float:
    """Median milliseconds of `fn` on the GPU (events, warm-up, many repeats)."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def device_limits(refresh: bool = False) -> DeviceLimits:
    """This GPU's measured copy bandwidth and fp16 matmul rate, cached per device and torch."""
    name = torch.cuda.get_device_name()
    key = f"{name} | torch {torch.__version__}"
    cached = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    if key in cached and not refresh:
        return DeviceLimits(**cached[key])
    limits = DeviceLimits(name, _copy_gbps(), _matmul_tflops())
    cached[key] = asdict(limits)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(cached, indent=1))
    return limits


def _copy_gbps(n: int = 1 << 28) -> float:
    """A 1 GiB float32 copy (far larger than any L2), counting bytes read plus written."""
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    return 2 * src.element_size() * n / bench(lambda: dst.copy_(src)) / 1e6


def _matmul_tflops(m: int = 8192) -> float:
    """Dense fp16 matmul on random data (zeros run faster than real data)."""
    a = torch.randn(m, m, dtype=torch.float16, device="cuda")
    b = torch.randn(m, m, dtype=torch.float16, device="cuda")
    return 2 * m**3 / bench(lambda: a @ b) / 1e9


def measure(launch: Callable[[], Any], tensors: list[torch.Tensor], sizes: dict[str, int], flops: int,
            torch_version: Callable[[], Any] | None = None) -> PerfReport:
    """Time a launch (and torch's version of the same work) at one size; `tensors` are the
    kernel's inputs and output, each of which must be read or written at least once."""
    ms = bench(launch)
    torch_ms = bench(torch_version) if torch_version is not None else None
    moved = sum(t.numel() * t.element_size() for t in tensors)
    return PerfReport(dict(sizes), ms, torch_ms, moved, flops, device_limits())
