"""What a phase boundary costs inside one persistent Triton kernel, against a kernel boundary in a CUDA graph.

The lean decode step (solutions/gptq/decode.py) is about 130 kernels; each hand-off from one to the next
costs about 2 us at batch 1 even with programmatic dependent launch (results/h100_timeline). The way
past that is one persistent kernel per layer or per step, whose phases (norm, q/k/v, attention, ...)
meet at grid-wide barriers instead of kernel boundaries. Before building one: is a Triton grid barrier
(one atomic per program, then polling a counter in L2) cheaper than a kernel boundary, and does issuing
the next phase's weight loads before the barrier hide it?

Every variant runs ROUNDS rounds. In a round each of P programs (P = the SM count) reads its share of
that round's weights (``--kib`` KiB per program, a fresh region each round, all past the L2), then a
value that another program wrote in the round before, and writes its own: a dependency from round to
round, as from one phase of a step to the next. The variants:

- ``kernels``: one kernel launch per round, captured in a CUDA graph (the lean step today, no PDL);
- ``kernels-pdl``: the same launched with PDL, each kernel starting its weight loads before its wait;
- ``kernels-pdl-after``: with PDL, the weight loads after the wait;
- ``kernels-pdl-l2``: with PDL, an L2 prefetch of the weights before the wait, the loads after it
  (what the step's matmuls do for their first K step, ``pdl.PREFETCH_FIRST``);
- ``barrier``: one persistent kernel, the rounds separated by a grid barrier polled with atomics;
- ``barrier-ld``: the same polled with volatile loads;
- ``barrier-ahead``: the barrier, with each program's loads of the next round's weights issued between
  its arrival and its wait (the data waits in registers through the barrier: what a megakernel would do).

Prints us per round and the data check (every value equals the rounds' sum: the barrier orders them).

    python3 benchmarks/gptq/experiments/grid_barrier.py [--rounds 64] [--kib 0 16 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py
from common import interleaved_medians, start_gpu_run, write_report  # noqa: E402

from solutions.gptq.pdl import prefetch_to_l2, start_next_kernel, wait_for_previous_kernel  # noqa: E402

WEIGHT_BYTES = 1 << 30  # the weights cycle through 1 GiB (past any L2)


@triton.jit
def _share_start(round_, pid, programs, region_words, WORDS: tl.constexpr):
    """Where this program's share (WORDS contiguous int32) of round ``round_``'s weights starts."""
    return ((round_ * programs + pid) % (region_words // WORDS)).to(tl.int64) * WORDS


@triton.jit
def _weights_ptrs(w_ptr, round_, pid, programs, region_words, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Pointers to this program's (ROWS, COLS) int32 share of round ``round_``'s weights."""
    share = _share_start(round_, pid, programs, region_words, ROWS * COLS)
    return w_ptr + share + tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]


@triton.jit
def _hand_off(data_ptr, round_, pid, programs, weight_sum):
    """Read what program pid + 1 wrote in the round before, write this program's value for this round
    (two buffers by round parity; L2 loads, the writer ran on another SM)."""
    prev = tl.load(data_ptr + (round_ % 2) * programs + (pid + 1) % programs, cache_modifier=".cg")
    tl.store(data_ptr + ((round_ + 1) % 2) * programs + pid, prev + 1 + weight_sum)


@triton.jit
def _round_kernel(data_ptr, w_ptr, round_, region_words, ROWS: tl.constexpr, COLS: tl.constexpr,
                  PDL: tl.constexpr, WEIGHTS: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    ptrs = _weights_ptrs(w_ptr, round_, pid, programs, region_words, ROWS, COLS)
    if PDL:
        start_next_kernel()
    # Before the wait (no kernel writes the weights): WEIGHTS 0 nothing, 1 the loads, 2 an L2 prefetch per line.
    if WEIGHTS == 1:
        w = tl.load(ptrs)
    if WEIGHTS == 2:
        share = _share_start(round_, pid, programs, region_words, ROWS * COLS)
        prefetch_to_l2(w_ptr + share + tl.arange(0, ROWS * COLS // 32) * 32)  # 32 words: one 128-byte line
    if PDL:
        wait_for_previous_kernel()
    if WEIGHTS != 1:
        w = tl.load(ptrs)
    _hand_off(data_ptr, round_, pid, programs, tl.sum(tl.sum(w, axis=1), axis=0) % 2)


@triton.jit
def _arrive(counter_ptr):
    """Count this program in at the barrier (its earlier writes and reads done first: release)."""
    tl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")


@triton.jit
def _wait(counter_ptr, target, POLL_ATOMIC: tl.constexpr):
    """Wait until ``target`` programs have arrived (the counter only grows)."""
    if POLL_ATOMIC:
        while tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < target:
            pass
    else:
        while tl.load(counter_ptr, volatile=True) < target:
            pass


@triton.jit
def _persistent_kernel(data_ptr, w_ptr, counter_ptr, rounds, region_words, ROWS: tl.constexpr,
                       COLS: tl.constexpr, POLL_ATOMIC: tl.constexpr, AHEAD: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    w = tl.load(_weights_ptrs(w_ptr, 0, pid, programs, region_words, ROWS, COLS))
    for r in range(rounds):
        if not AHEAD and r > 0:
            w = tl.load(_weights_ptrs(w_ptr, r, pid, programs, region_words, ROWS, COLS))
        _hand_off(data_ptr, r, pid, programs, tl.sum(tl.sum(w, axis=1), axis=0) % 2)
        # The arrive is a release: every memory access before it must be done, so the next round's loads go
        # out after it (AHEAD: before the wait, their data used after it; else after the wait).
        _arrive(counter_ptr)
        if AHEAD:
            w = tl.load(_weights_ptrs(w_ptr, r + 1, pid, programs, region_words, ROWS, COLS))
        _wait(counter_ptr, (r + 1) * programs, POLL_ATOMIC)


# kernel variants: (PDL, WEIGHTS of _round_kernel)
KERNEL_VARIANTS = {"kernels": (False, 0), "kernels-pdl": (True, 1), "kernels-pdl-after": (True, 0),
                   "kernels-pdl-l2": (True, 2)}
VARIANTS = (*KERNEL_VARIANTS, "barrier", "barrier-ld", "barrier-ahead")


def launcher(variant: str, rounds: int, kib: int, programs: int, data: torch.Tensor, weights: torch.Tensor,
             counter: torch.Tensor):
    """A closure running ``rounds`` rounds of ``variant`` (``kib`` KiB of weights per program and round)."""
    cols = 256
    rows = max(1, kib * 1024 // 4 // cols)  # kib = 0: one row of 1 KiB, so that every variant loads something
    rows = triton.next_power_of_2(rows)
    region = weights.numel() // (rows * cols) * (rows * cols)
    grid = (programs,)
    if variant in KERNEL_VARIANTS:
        pdl, when = KERNEL_VARIANTS[variant]
        options = {"launch_pdl": True} if pdl else {}

        def run() -> None:
            for r in range(rounds):
                _round_kernel[grid](data, weights, r, region, ROWS=rows, COLS=cols, PDL=pdl, WEIGHTS=when,
                                    num_warps=8, **options)
        return run

    def run() -> None:
        counter.zero_()
        _persistent_kernel[grid](data, weights, counter, rounds, region, ROWS=rows, COLS=cols,
                                 POLL_ATOMIC=variant != "barrier-ld", AHEAD=variant == "barrier-ahead",
                                 num_warps=8)
    return run


def graph_us(run, rounds: int) -> float:
    """Median us per round from replays of a CUDA graph of ``run``."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        run()
    ms = triton.testing.do_bench(graph.replay, warmup=10, rep=50, return_mode="median")
    return ms * 1e3 / rounds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=64)
    parser.add_argument("--kib", type=int, nargs="+", default=[0, 16, 64])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the interleaved medians")
    parser.add_argument("--out", type=Path, default=Path("grid_barrier_out"))
    args = parser.parse_args()
    env = start_gpu_run("grid_barrier.py", args.out)
    if env is None:
        return 0
    programs = torch.cuda.get_device_properties(0).multi_processor_count
    weights = torch.ones(WEIGHT_BYTES // 4, device="cuda", dtype=torch.int32)
    counter = torch.zeros(1, device="cuda", dtype=torch.int32)
    rows, lines = [], [f"# Grid barrier against kernel boundaries, {torch.cuda.get_device_name()}", "",
                       f"- command: `{env['command']}`; torch {env['torch']}, triton {env['triton']}",
                       f"- {programs} programs (one per SM), {args.rounds} rounds per launch or graph, medians of "
                       f"{args.repeats} interleaved repeats; us per round", "",
                       "| KiB per program per round | MB per round | " + " | ".join(args.variants) + " | data check |",
                       "|---:|---:|" + "---:|" * len(args.variants) + "---|"]
    for kib in args.kib:
        runs, checks = {}, {}
        for variant in args.variants:
            data = torch.zeros(2 * programs, device="cuda", dtype=torch.int32)
            run = launcher(variant, args.rounds, kib, programs, data, weights, counter)
            data.zero_()
            run()
            torch.cuda.synchronize()
            # Every weight is 1 and a share holds an even number of them, so each round adds 1 to the value
            # read from the round before: after the rounds every value is ``rounds`` if they were ordered.
            final = data[(args.rounds % 2) * programs:][:programs]
            checks[variant] = bool((final == args.rounds).all())
            runs[variant] = lambda run=run: graph_us(run, args.rounds)
        medians = interleaved_medians(runs, args.repeats)
        mb = programs * max(1, kib) * 1024 / 1e6
        rows.append({"kib": kib, "mb_per_round": mb, "us_per_round": medians, "data_check": checks})
        lines.append(f"| {kib} | {mb:.2f} | " + " | ".join(f"{medians[v]:.2f}" for v in args.variants)
                     + " | " + ("ok" if all(checks.values()) else f"FAILED {checks}") + " |")
    write_report(args.out, "grid_barrier", {"environment": env, "rows": rows}, lines)
    return 0 if all(all(r["data_check"].values()) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
