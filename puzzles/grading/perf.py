"""Speed on a GPU: time a kernel, and compare it with what this device can do.

The ceilings are measured once per device and cached, because datasheet numbers are not what a
kernel can reach: a large device-to-device copy (bytes read plus bytes written), a large fill
(bytes written only), a large fp16 matmul (the matrix rate), and an empty kernel (the launch
floor: the time of a launch that does nothing, measured as the kernels are).

A kernel's floor is the larger of the time its fewest bytes take (each input read once at the
read rate, the output written once at the write rate: memory reads and writes share the bus,
so their times add) and its FLOPs at the matrix rate; its fraction of the roofline is that floor
over its measured time. When the launch floor is larger than that, the size is launch-bound:
nothing the kernel does can bring it under the launch floor, and the report says so instead.

Everything but the measuring (`bench`, `device_limits`, `measure`) is pure: given the times,
`PerfReport` computes and words the report (tested on a CPU with made-up limits).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import triton

from puzzles.course.puzzle import Baseline
from puzzles.course.spec import call_spec, spec_signature

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triton-puzzles" / "device_limits.json"

Sizes = dict[str, int]
# A time under this many launch floors, at a size whose work takes less than one, is mostly launch.
LAUNCH_BOUND_WITHIN = 2.0


@dataclass
class DeviceLimits:
    device: str
    copy_gbps: float  # a large copy: bytes read + written per second, in GB/s
    matmul_tflops: float  # dense fp16 matmul, TFLOP/s
    write_gbps: float | None = None  # a large fill: bytes written per second (None: as the copy)
    launch_us: float | None = None  # an empty kernel's time, launch included (None: not measured)

    @property
    def read_gbps(self) -> float:
        """Bytes read per second: a copy of n bytes takes n/read + n/write."""
        if not self.write_gbps:
            return self.copy_gbps
        per_byte = 2 / self.copy_gbps - 1 / self.write_gbps
        return 1 / per_byte if per_byte > 0 else self.copy_gbps

    @property
    def written_gbps(self) -> float:
        return self.write_gbps or self.copy_gbps



@dataclass
class PerfReport:
    sizes: Sizes
    ms: float  # median
    torch_ms: float | None
    read_bytes: int  # fewest bytes the problem must read (each input once)
    written_bytes: int  # and write (the output once)
    flops: int
    limits: DeviceLimits
    baseline: Baseline | None = None
    baseline_ms: float | None = None
    baseline_error: str = ""  # why the baseline could not be timed

    @property
    def bytes_moved(self) -> int:
        return self.read_bytes + self.written_bytes

    @property
    def gbps(self) -> float:
        return self.bytes_moved / self.ms / 1e6

    @property
    def tflops(self) -> float:
        return self.flops / self.ms / 1e9

    @property
    def memory_ms(self) -> float:
        return (self.read_bytes / (self.limits.read_gbps * 1e6)
                + self.written_bytes / (self.limits.written_gbps * 1e6))

    @property
    def floor_ms(self) -> float:
        compute = self.flops / (self.limits.matmul_tflops * 1e9) if self.flops else 0.0
        return max(self.memory_ms, compute)

    @property
    def launch_ms(self) -> float:
        return (self.limits.launch_us or 0.0) / 1000

    @property
    def launch_bound(self) -> bool:
        """The launch alone takes longer than moving the bytes and doing the FLOPs would, and it is
        most of the kernel's time: only a larger size would show the kernel itself."""
        return self.launch_ms > self.floor_ms and self.ms < LAUNCH_BOUND_WITHIN * self.launch_ms

    @property
    def roofline_fraction(self) -> float:
        return self.floor_ms / self.ms

    def text(self) -> str:
        size = size_text(self.sizes)
        parts = [f"speed at {size}: {_us(self.ms)}, {self.gbps:.0f} GB/s"]
        if self.flops:
            parts.append(f"{self.tflops:.1f} TFLOP/s")
        work = f"its {fmt_bytes(self.bytes_moved)} alone would take {_us(self.floor_ms)}"
        if self.launch_bound:
            parts.append(f"launch-bound: {_us(self.ms)} against a launch floor of {_us(self.launch_ms)} (an empty "
                         f"kernel on this {self.limits.device}; {work})")
        elif self.launch_ms > self.floor_ms:  # far from the launch floor, which is still the bound
            parts.append(f"{min(self.launch_ms / self.ms, 1.0):.0%} of what this {self.limits.device} allows at "
                         f"this size (floor {_us(self.launch_ms)}: the launch floor, an empty kernel's time; {work})")
        else:
            # Above 100% only within the noise of the measured ceilings: shown as 100%.
            parts.append(f"{min(self.roofline_fraction, 1.0):.0%} of this {self.limits.device}'s roofline "
                         f"(floor {_us(self.floor_ms)})")
        if self.torch_ms is not None:
            parts.append(f"torch (the spec): {_us(self.torch_ms)}")
        if self.baseline is not None and self.baseline_ms is not None:
            ratio = self.ms / self.baseline_ms
            gap = f"{ratio:.1f}x faster than this kernel" if ratio >= 1 else f"{1 / ratio:.1f}x slower than this kernel"
            parts.append(f"{self.baseline.name} at this size: {_us(self.baseline_ms)}, {gap}. {self.baseline.lesson}")
        elif self.baseline is not None:
            parts.append(f"{self.baseline.name} could not be timed here ({self.baseline_error})")
        return "; ".join(parts)


def size_text(sizes: Sizes, sep: str = " ") -> str:
    """The sizes as `N0=4096 B0=1024`; a tensor-list puzzle's many lengths (L0, L1, ...) are left
    out, its count K and total T say enough."""
    return sep.join(f"{k}={v}" for k, v in sizes.items() if not re.fullmatch(r"L\d+", k))


def _us(ms: float) -> str:
    us = ms * 1000
    return f"{us:.2f} us" if us < 1 else f"{us:.1f} us"


def fewest_bytes(spec: Callable[..., Any], sizes: Sizes) -> tuple[int, int]:
    """(bytes read, bytes written) when each of the spec's inputs is read once and its output
    written once (a list of tensors counts as the spec sees it: laid end to end)."""
    inputs, out = spec_signature(spec)

    def nbytes(t: Any) -> int:
        return math.prod(t.shape(sizes)) * torch.empty((), dtype=t.dtype).element_size()

    return sum(nbytes(t) for t in inputs), nbytes(out)


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


# -- measuring (on a GPU) ----------------------------------------------------------------------------


def bench(fn: Callable[[], Any]) -> float:
    """Median milliseconds of `fn` on the GPU (events, warm-up, many repeats)."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def device_limits(refresh: bool = False) -> DeviceLimits:
    """This GPU's measured ceilings and launch floor, cached per device, torch and Triton."""
    name = torch.cuda.get_device_name()
    key = f"{name} | torch {torch.__version__} | triton {triton.__version__}"
    cached = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    known = {f.name for f in fields(DeviceLimits)}
    entry = {k: v for k, v in cached.get(key, {}).items() if k in known}
    if not refresh and entry and all(entry.get(f) is not None for f in known):
        return DeviceLimits(**entry)
    limits = DeviceLimits(name, _copy_gbps(), _matmul_tflops(), _write_gbps(), _launch_us())
    cached[key] = asdict(limits)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(cached, indent=1))
    return limits


def _copy_gbps(n: int = 1 << 28) -> float:
    """A 1 GiB float32 copy (far larger than any L2), counting bytes read plus written."""
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    return 2 * src.element_size() * n / bench(lambda: dst.copy_(src)) / 1e6


def _write_gbps(n: int = 1 << 28) -> float:
    """A 1 GiB float32 fill: bytes written only (an output a kernel never reads)."""
    dst = torch.empty(n, dtype=torch.float32, device="cuda")
    return dst.element_size() * n / bench(lambda: dst.fill_(1.0)) / 1e6


def _matmul_tflops(m: int = 8192) -> float:
    """Dense fp16 matmul on random data (zeros run faster than real data)."""
    a = torch.randn(m, m, dtype=torch.float16, device="cuda")
    b = torch.randn(m, m, dtype=torch.float16, device="cuda")
    return 2 * m**3 / bench(lambda: a @ b) / 1e9


@triton.jit
def _empty_kernel():
    pass


def _launch_us() -> float:
    """An empty Triton kernel, timed as `bench` times every kernel: no kernel can be faster."""
    return bench(lambda: _empty_kernel[(1,)]()) * 1000


def measure(launch: Callable[[], Any], spec: Callable[..., Any], inputs: list[torch.Tensor], sizes: Sizes,
            flops: int, baseline: Baseline | None = None) -> PerfReport:
    """Time a launch at one size, beside torch's version of the same work (the spec on `inputs`,
    the spec's inputs on the GPU) and the puzzle's baseline kernel, if it has one."""
    ms = bench(launch)
    torch_ms = bench(lambda: call_spec(spec, inputs, sizes))
    baseline_ms, baseline_error = None, ""
    if baseline is not None:
        try:
            baseline_ms = bench(baseline.launch(inputs, sizes))
        except Exception as err:  # noqa: BLE001 - the comparison must never cost the learner the report
            baseline_error = f"{type(err).__name__}: {err}".splitlines()[0]
    read, written = fewest_bytes(spec, sizes)
    return PerfReport(dict(sizes), ms, torch_ms, read, written, flops, device_limits(), baseline, baseline_ms,
                      baseline_error)
