"""Shared pieces of the GPTQ benchmark and tuner: shapes, random layers, byte counts, environment."""

from __future__ import annotations

import json
import platform
import shlex
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from solutions.gptq import GPTQWeight, load_gptq_layer  # noqa: E402

M_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)
SHAPES = ((4096, 4096), (4096, 11008), (11008, 4096), (8192, 28672), (28672, 8192))  # (K, N)
GROUP = 128
L2_BYTES = 50 * 2**20  # H100 SXM


def random_layer(k: int, n: int, group: int = GROUP, device: str = "cuda", seed: int = 0,
                 keep_plain: bool | None = None) -> GPTQWeight:
    """A valid random GPTQ layer (every nibble uniform in [0, 15], scales in [1e-3, 1e-2]); ``keep_plain``
    as in load_gptq_layer (the plain qweight beside the repacked copy, for baselines that read it)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    tensors = {
        "qweight": torch.randint(-(2**31), 2**31 - 1, (k // 8, n), generator=gen, device=device, dtype=torch.int32),
        "qzeros": torch.randint(-(2**31), 2**31 - 1, (k // group, n // 8), generator=gen, device=device,
                                dtype=torch.int32),
        "scales": (torch.rand((k // group, n), generator=gen, device=device) * 9e-3 + 1e-3).half(),
    }
    return load_gptq_layer(tensors, {"bits": 4, "group_size": group, "desc_act": False}, keep_plain=keep_plain)


def rotated_layers(k: int, n: int) -> tuple[list[GPTQWeight], torch.Tensor, list[torch.Tensor]]:
    """Weight copies to rotate past the L2 (int4, and fp16 for cuBLAS) and the fp32 reference of the first."""
    from solutions.gptq import dequantize

    copies = [random_layer(k, n, seed=s) for s in range(copies_to_beat_l2(k * n // 2))]
    w16 = [dequantize(c, torch.float16) for c in copies[: max(1, copies_to_beat_l2(k * n * 2))]]
    return copies, dequantize(copies[0], torch.float32), w16


def resident_layer(k: int, n: int) -> tuple[list[GPTQWeight], torch.Tensor, list[torch.Tensor]]:
    """One weight copy (L2-resident where it fits), shaped as rotated_layers' result: ([int4], fp32 ref, [fp16])."""
    from solutions.gptq import dequantize

    w = random_layer(k, n)
    w_ref = dequantize(w, torch.float32)
    return [w], w_ref, [w_ref.half()]


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius error of ``out`` against the fp32 reference."""
    return ((out.float() - ref).norm() / ref.norm()).item()


def ab_cases(shapes: Iterable[int], ms: list[int]) -> Iterator[tuple]:
    """The cases of an A/B benchmark: for SHAPES[i] of each i in ``shapes`` and each M of ``ms``,
    (m, k, n, A, the fp32 reference A @ W, W's int4 copies, their fp16 copies). The copies rotate past
    the L2 (rotated_layers) and are freed before the next shape."""
    for index in shapes:
        k, n = SHAPES[index]
        copies, w_ref, w16 = rotated_layers(k, n)
        for m in ms:
            a = torch.randn(m, k, device="cuda", dtype=torch.float16)
            yield m, k, n, a, a.float() @ w_ref, copies, w16
        del copies, w16, w_ref
        torch.cuda.empty_cache()


def interleaved_medians(timers: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median over ``rounds`` of each timer. The methods take turns, and each round starts one method later,
    so that a slow stretch (clocks, power) hits them all and no method always runs first or after the same one."""
    names = list(timers)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timers[name]())
    return {name: statistics.median(values) for name, values in times.items()}


def time_candidates(calls: dict[str, Callable[[], torch.Tensor]], ref: torch.Tensor, rounds: int,
                    where: str) -> dict[str, float]:
    """Median us per call of each candidate that computes `ref` (rel err < 1e-2; one that fails or errs is
    printed and dropped), timed as prefill.py times a call (CUDA-graph replays of 4 calls, the candidates
    taking turns in `rounds`), printed fastest first against the "cublas" candidate, which must be one."""
    for name, call in list(calls.items()):
        try:
            err = rel_err(call(), ref)
        except Exception as error:  # noqa: BLE001 - a candidate that does not compile is dropped
            err = float("nan")
            print(f"{where} {name}: {type(error).__name__}: {str(error)[:200]}", flush=True)
        if not err < 1e-2:
            print(f"{where} {name}: rel err {err:.1e}, dropped", flush=True)
            del calls[name]
    med = interleaved_medians({name: lambda c=call: gpu_time_us([c], min_calls=4, warmup=10, rep=60)
                               for name, call in calls.items()}, rounds)
    print(f"\n{where}: cuBLAS {med['cublas']:.1f} us", flush=True)
    for us, name in sorted((us, name) for name, us in med.items() if name != "cublas"):
        print(f"  {name:28s} {us:8.1f} us  {med['cublas'] / us:.2f}x cuBLAS", flush=True)
    return med


def gptq_bytes(m: int, k: int, n: int, group: int = GROUP) -> int:
    """The fewest bytes a GPTQ matmul must move: int4 weights, scales, zeros, A and C once each."""
    return k * n // 2 + (k // group) * n * 2 + (k // group) * (n // 8) * 4 + m * k * 2 + m * n * 2


def copies_to_beat_l2(nbytes: int) -> int:
    """How many weight copies to rotate so that one pass over them is at least twice the L2."""
    return max(1, min(16, -(-2 * L2_BYTES // nbytes)))


def copy_bandwidth(nbytes: int = 2**30) -> float:
    """Device-to-device copy rate in bytes/s, counting bytes read plus bytes written."""
    import triton.testing

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=50, rep=300, return_mode="median")
    return 2 * nbytes / (ms * 1e-3)


def environment() -> dict[str, str]:
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "device": torch.cuda.get_device_name(0),
        "sms": str(props.multi_processor_count),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": str(torch.version.cuda),
        "python": platform.python_version(),
        "command": "python3 " + " ".join(shlex.quote(a) for a in sys.argv),
    }


def start_gpu_run(script: str, out: Path) -> dict[str, str] | None:
    """The environment of a run that writes under `out`; None, after saying so, without a GPU."""
    if not torch.cuda.is_available():
        print(f"{script} needs a CUDA GPU (none found); nothing was measured.")
        return None
    out.mkdir(parents=True, exist_ok=True)
    return environment()


def write_report(out: Path, name: str, data: dict, lines: list[str]) -> None:
    """`name`.json (the raw rows) and `name`.md (the table, also printed) under `out`."""
    (out / f"{name}.json").write_text(json.dumps(data, indent=1))
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def gpu_time_us(calls, min_calls: int = 16, warmup: int = 25, rep: int = 100) -> float:
    """Median GPU time of one call, in us, from replays of a CUDA graph that cycles through ``calls``.

    A graph takes the Python launch cost (tens of us per call, more than a small GEMV takes on the
    GPU) out of the measurement, as CUDA graphs do in a decoding loop. ``calls`` are typically one
    closure per weight copy, so that consecutive calls read different weights; ``do_bench`` also
    flushes L2 before every replay. Each call must have run once before (compilation).
    """
    import triton.testing

    seq = list(calls) * max(1, -(-min_calls // len(calls)))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on the capture stream (allocator, cuBLAS workspaces)
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):  # captured on the stream the warm-up ran on
        for call in seq:
            call()
    ms = triton.testing.do_bench(graph.replay, warmup=warmup, rep=rep, return_mode="median")
    del graph
    return ms * 1e3 / len(seq)


def load_config_overrides(path: Path) -> int:
    """Use tune.py's best.json instead of the checked-in table (to measure a fresh tuning run): its entries
    replace or join ``configs.TUNED`` for the buckets each serves. Returns how many entries it set."""
    from solutions.gptq import GPTQConfig
    from solutions.gptq import configs as gptq_configs

    best = json.loads(path.read_text())
    count = 0
    for key, rec in best.items():
        m, k, n = map(int, key.split(","))
        for bucket in buckets_for(m, k, n, best):
            gptq_configs.TUNED[(bucket, k, n)] = GPTQConfig(**rec["cfg"])
            count += 1
    return count


def buckets_for(m: int, k: int, n: int, tuned_keys) -> tuple[int, ...]:
    """Which M buckets a config tuned at M = m serves: M = 1 stands for 1..8 and M = 16 for 16
    (or for 1..16 when M = 1 was not tuned for this shape); other M only for themselves."""
    if m == 1:
        return (1, 2, 4, 8)
    if m == 16:
        return (16,) if f"1,{k},{n}" in tuned_keys else (1, 2, 4, 8, 16)
    return (m,)


def host_times(methods: dict[str, list], n_calls: int = 200, rounds: int = 9) -> dict[str, tuple[float, float]]:
    """{name: (host us per call, eager wall us per call)}, medians over ``rounds`` rounds.

    Each round times every method once, in an order rotated by one per round (so that no method
    always runs first or right after a particular other one), as ``n_calls`` back-to-back calls
    cycling through the method's closures: host = CPU time of the loop (no sync inside), wall = the
    same loop including the final synchronize. The host time of even a plain cuBLAS call moves by
    several us between runs, so methods are compared within a round and summarised by medians.
    """
    import statistics
    import time

    names = list(methods)
    seqs = {name: [calls[i % len(calls)] for i in range(n_calls)] for name, calls in methods.items()}
    for calls in methods.values():  # warm-up: plans, compilation, cuBLAS handles
        for call in calls:
            call()
    torch.cuda.synchronize()
    host: dict[str, list[float]] = {name: [] for name in names}
    wall: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            seq = seqs[name]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for call in seq:
                call()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            host[name].append((t1 - t0) / n_calls * 1e6)
            wall[name].append((t2 - t0) / n_calls * 1e6)
    return {name: (statistics.median(host[name]), statistics.median(wall[name])) for name in names}
