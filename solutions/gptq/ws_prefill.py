"""GPTQ prefill on Hopper with warp specialisation (Gluon): loads, dequantization and MMA in separate warps.

The fused Triton kernel (``kernels.gptq_small_m_kernel``) has the same warps dequantize a K step and
issue its wgmma, and Triton waits for most of a step's MMA before the next step's dequantization can
start, so the tensor cores idle for part of every step (benchmarks/gptq/NOTES.md, "Prefill tiles").
Here each program computes a 128 x BLOCK_M tile of C^T = W^T A^T with three partitions:

* a loader warp issues the TMA copies of every K step (A's BLOCK_M x 128 tile and the repacked words
  of 128 columns, one contiguous 8 KB block of ``GPTQWeight.qweight_mma``) into a ring of STAGES
  shared-memory buffers, completing on a "ready" mbarrier per buffer;
* two consumer warpgroups, each its own partition owning 64 columns of W (rows of W^T): wait for a
  buffer, read their words with the wgmma register-fragment layout (each thread's 16 bytes are the
  32 K positions its fragment needs, see ``loader.repack_for_mma``; the dequantized tile reaches the
  wgmma with no layout conversion, which ``convert_layout(..., assert_trivial=True)`` checks at compile
  time), dequantize in registers, run the step's 8 wgmma with the weights as the register operand,
  and release the buffer ("empty" mbarrier, one arrival per warpgroup).

The overlap comes from the partitions, not from within a warpgroup: while one consumer dequantizes,
the other's wgmma keeps the tensor cores busy, and the loader's copies run ahead of both. (Keeping a
step's wgmma in flight while the same warpgroup dequantizes the next step made ptxas serialise every
wgmma, C7515, in the variants tried; tests/gptq/test_gptq_ws.py compiles the kernel for sm_90 and fails if
ptxas reports serialised wgmma.) Registers: 168 per thread at launch for 12 warps, redistributed by
``setmaxnreg`` as 240 for each consumer warpgroup and 24 for the loader's.

Two launches of the same kernel (``configs.WSTile.stream_k``):

* a program per tile (the default);
* stream-K: one program per SM. All but the last one or two waves of tiles go whole to the programs
  (tile c, c + G, ...); the K steps of the remaining tiles are shared out evenly, so no wave runs
  partly empty (M = 512 on 4096 x 11008 makes 172 tiles of 256 rows for 132 SMs). A program whose
  share starts inside a tile writes its fp32 partial sums to a scratch buffer and raises a flag; the
  tile's owner (the program whose share starts it: its last share) waits for the flags, adds the
  partial sums and stores C. Owners wait only on later programs' first shares, which never wait, so
  no cycle can form. The hand-off is per thread (each owner thread reads what the contributor thread
  in the same position wrote, release/acquire at GPU scope), and the owners rezero the flags, so the
  next launch finds them clear (see :func:`scratch`: one buffer per stream, or per call while a CUDA
  graph is captured before any eager call on its stream).

Restrictions (``supported``): CUDA compute capability 9.x, Gluon with warp_specialize (Triton 3.6+),
the repacked weights, K and N multiples of 128, one group per K step (G a multiple of 128, or G >= K),
no g_idx/act-order permutation, fp16 A row-major and 16-byte aligned. Everything else goes to the
Triton kernel. GPU only: Gluon does not run in the interpreter.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from solutions.gptq.dequant import DEQUANT_CONSTRAINTS, DEQUANT_SCALED_PTX
from solutions.gptq.loader import GPTQWeight

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    HAVE_GLUON = hasattr(gl, "warp_specialize")
except ImportError:  # a Triton without Gluon
    HAVE_GLUON = False

BLOCK_N = 128  # columns of W (rows of C^T) per program: two consumer warpgroups of 64
BLOCK_K = 128  # one K step: one repacked block per 128 columns


if HAVE_GLUON:
    _BLOCK_N = gl.constexpr(BLOCK_N)
    _BLOCK_K = gl.constexpr(BLOCK_K)

    @gluon.jit
    def _dequant_words(words, zero, scale_bits):
        """(q - zero) * scale of the 8 nibbles of each word, fp16; output j is nibble j (dequant.DEQUANT_SCALED_PTX)."""
        zero2 = gl.expand_dims((0x6400 + zero) * 0x10001, 1)
        neg_zero2 = gl.expand_dims((0xD400 + 16 * zero) * 0x10001, 1)
        scale2 = gl.expand_dims(scale_bits * 0x10001, 1)
        zero2, _ = gl.broadcast(zero2, words)
        neg_zero2, _ = gl.broadcast(neg_zero2, words)
        scale2, _ = gl.broadcast(scale2, words)
        return gl.inline_asm_elementwise(
            asm=DEQUANT_SCALED_PTX,
            constraints=DEQUANT_CONSTRAINTS,
            args=[words, zero2, neg_zero2, scale2],
            dtype=(gl.float16,) * 8,
            is_pure=True,
            pack=1,
        )

    # Stream-K hand-off between programs, per thread (each consumer thread of the owner reads exactly
    # the partial sums that the thread in the same position of the contributor wrote; the layouts match).
    # Labels inside { } are local to that block, so the asm can be instantiated many times.
    _SIGNAL_PTX = gl.constexpr("red.release.gpu.global.add.s32 [$1], 1;\n mov.b32 $0, 0;")
    _WAIT_PTX = gl.constexpr("""{
        .reg .pred p;
        .reg .b32 v;
        WAIT:
        ld.acquire.gpu.global.b32 v, [$1];
        setp.lt.s32 p, v, 128;
        @p bra WAIT;
        and.b32 $0, v, 0;
        }""")
    # Two consecutive fp32 partial sums (the accumulator's pairs of columns), added to the accumulator.
    _ADD_PARTIAL_PTX = gl.constexpr(
        "{ .reg .f32 t0, t1; ld.global.cg.v2.f32 {t0, t1}, [$4]; add.f32 $0, $2, t0; add.f32 $1, $3, t1; }")
    # The owner's 128 threads count past the contributor's 128; the last one (it saw 255) rezeroes the
    # flag for the next launch, once every owner thread has passed its wait.
    _RELEASE_PTX = gl.constexpr("""{
        .reg .pred p;
        .reg .b32 old;
        atom.relaxed.gpu.global.add.s32 old, [$1], 1;
        setp.eq.s32 p, old, 255;
        @p st.relaxed.gpu.global.b32 [$1], 0;
        mov.b32 $0, 0;
        }""")

    @gluon.jit
    def _schedule(M, N, K, dp_tiles, BLOCK_M: gl.constexpr):
        """This program's work: ``n_dp`` whole tiles (c, c + G, ...), then the K steps [sk_begin, sk_end)
        of the stream-K tiles (those from ``dp_tiles`` on, counted in K steps across tiles)."""
        c = gl.program_id(0)
        n_programs = gl.num_programs(0)
        n_steps = K // _BLOCK_K
        n_tiles = gl.cdiv(M, BLOCK_M) * (N // _BLOCK_N)
        n_dp = (dp_tiles - c + n_programs - 1) // n_programs
        sk_steps = (n_tiles - dp_tiles) * n_steps
        sk_begin = c * sk_steps // n_programs
        sk_end = (c + 1) * sk_steps // n_programs
        n_segments = n_dp
        if sk_end > sk_begin:
            n_segments = n_dp + (sk_end - 1) // n_steps - sk_begin // n_steps + 1
        return n_dp, sk_begin, sk_end, sk_steps, n_segments

    @gluon.jit
    def _segment(j, n_dp, sk_begin, sk_end, dp_tiles, K, M, N, BLOCK_M: gl.constexpr, GROUP_M: gl.constexpr):
        """Segment j of this program: (m0, n0, w_row0, tile, first K step, end K step)."""
        n_steps = K // _BLOCK_K
        tile = gl.program_id(0) + j * gl.num_programs(0)
        k_begin = 0
        k_end = n_steps
        if j >= n_dp:
            sk_tile = sk_begin // n_steps + (j - n_dp)
            tile = dp_tiles + sk_tile
            k_begin = gl.maximum(sk_begin - sk_tile * n_steps, 0)
            k_end = gl.minimum(sk_end - sk_tile * n_steps, n_steps)
        # Grouped tile order, as kernels._tile_ids: GROUP_M row tiles sweep the columns together.
        num_pid_m = gl.cdiv(M, BLOCK_M)
        per_group = GROUP_M * (N // _BLOCK_N)
        first_m = (tile // per_group) * GROUP_M
        rows_in_group = gl.minimum(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % rows_in_group
        pid_n = (tile % per_group) // rows_in_group
        # The repacked words: (N / 128, K / 128, 128, 16) as rows of 16, K rows per column tile.
        return pid_m * BLOCK_M, pid_n * _BLOCK_N, pid_n * K, tile, k_begin, k_end

    @gluon.jit
    def _per_thread(ptr):
        """``ptr`` once per thread of a 4-warp partition (an inline-asm argument that runs 128 times)."""
        return ptr + gl.zeros([128], gl.int32, layout=gl.BlockedLayout([1], [32], [4], [0]))

    @gluon.jit
    def _add_later_shares(acc, flags_ptr, partials_ptr, partial_offs, tile_end, sk_steps, WG: gl.constexpr,
                          BLOCK_M: gl.constexpr):
        """The owner's fix-up: add the partial sums of the programs that continued this tile (stream-K
        steps up to ``tile_end``). They start their stream-K work with it, so they never wait on this one."""
        mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BLOCK_M, 16])
        n_programs = gl.num_programs(0)
        other = gl.program_id(0) + 1
        start = other * sk_steps // n_programs
        while start < tile_end:
            after = (other + 1) * sk_steps // n_programs
            if after > start:  # a program with no K steps (more programs than steps) has nothing
                flag = flags_ptr + other * 2 + WG
                ready_zero = gl.inline_asm_elementwise(
                    _WAIT_PTX, "=r,l", [flag + gl.zeros([64], gl.int32, layout=gl.SliceLayout(1, mma_layout))],
                    dtype=gl.int32, is_pure=False, pack=1)
                # The loads depend on the wait's output, so nothing hoists them above it; each is added as
                # it arrives (a whole second tile of registers would spill at BLOCK_M 256).
                ptrs = partials_ptr + (other * 2 + WG) * (64 * BLOCK_M) + partial_offs + gl.expand_dims(ready_zero, 1)
                acc = gl.inline_asm_elementwise(_ADD_PARTIAL_PTX, "=f,=f,f,f,l,l", [acc, ptrs.to(gl.int64)],
                                                dtype=gl.float32, is_pure=False, pack=2)
                gl.inline_asm_elementwise(_RELEASE_PTX, "=r,l", [_per_thread(flag)], dtype=gl.int32, is_pure=False,
                                          pack=1)
            other += 1
            start = after
        return acc

    @gluon.jit
    def _consumer(args, ZERO_OFFSET: gl.constexpr, GROUP_SIZE: gl.constexpr, BLOCK_M: gl.constexpr,
                  STAGES: gl.constexpr, GROUP_M: gl.constexpr, WG: gl.constexpr):
        """One warpgroup: 64 columns of W per tile; for each segment its K steps, then its 64 x BLOCK_M
        slice of C^T (or, for a stream-K share, of the partial sums)."""
        (a_bufs, w_bufs, ready, empty, scales_ptr, zeros_ptr, c_ptr, scratch_ptr, M, N, K, dp_tiles,
         stride_sg, stride_zg) = args
        ROWS: gl.constexpr = 64
        # Words of this warpgroup's 64 columns: thread (warp w, lane t) holds columns 16w + t // 4 and
        # + 8, stored positions 4 (t % 4) .. + 3 (one 16-byte read each): wgmma's A-fragment rows and K.
        word_layout: gl.constexpr = gl.DistributedLinearLayout(
            reg_bases=[[0, 1], [0, 2], [8, 0]], lane_bases=[[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]],
            warp_bases=[[16, 0], [32, 0]], block_bases=[], shape=[ROWS, 16])
        mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BLOCK_M, 16])
        w_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma_layout, k_width=2)
        col_layout: gl.constexpr = gl.SliceLayout(1, word_layout)
        row_layout: gl.constexpr = gl.SliceLayout(1, mma_layout)
        out_layout: gl.constexpr = gl.BlockedLayout([8, 1], [8, 4], [1, 4], [0, 1])

        c = gl.program_id(0)
        n_programs = gl.num_programs(0)
        n_steps = K // _BLOCK_K
        n_dp, sk_begin, sk_end, sk_steps, n_segments = _schedule(M, N, K, dp_tiles, BLOCK_M)
        # Scratch (ws_prefill.scratch): a flag per (program, warpgroup), padded to 64 words, then each
        # program's partial sums, 2 warpgroups x 64 x BLOCK_M fp32.
        partial_offs = (gl.expand_dims(gl.arange(0, ROWS, layout=row_layout), 1) * BLOCK_M
                        + gl.expand_dims(gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, mma_layout)), 0))
        flags_ptr = scratch_ptr
        partials_ptr = scratch_ptr + (2 * n_programs + 63) // 64 * 64
        it = 0  # K steps consumed so far: the ring's position
        for j in range(n_segments):
            m0, n0, w_row0, tile, k_begin, k_end = _segment(j, n_dp, sk_begin, sk_end, dp_tiles, K, M, N, BLOCK_M,
                                                            GROUP_M)
            cols = n0 + WG * ROWS + gl.arange(0, ROWS, layout=col_layout)
            zero_shift = (cols % 8) * 4
            acc = gl.zeros([ROWS, BLOCK_M], gl.float32, layout=mma_layout)
            # A step's zero points and scales are loaded one step ahead (L2 latency off the critical path).
            g = k_begin * _BLOCK_K // GROUP_SIZE
            zw = gl.load(zeros_ptr + g * stride_zg + cols // 8)
            sw = gl.load(scales_ptr + g * stride_sg + cols)
            for i in range(k_begin, k_end):
                s = it % STAGES
                zero = ((zw >> zero_shift) & 0xF) + ZERO_OFFSET
                scale_bits = sw.to(gl.int16, bitcast=True).to(gl.int32) & 0xFFFF
                g_next = gl.minimum(i + 1, k_end - 1) * _BLOCK_K // GROUP_SIZE
                zw = gl.load(zeros_ptr + g_next * stride_zg + cols // 8)
                sw = gl.load(scales_ptr + g_next * stride_sg + cols)

                mbarrier.wait(ready.index(s), (it // STAGES) & 1)
                words = w_bufs.index(s).slice(WG * ROWS, ROWS).load(word_layout)
                x0, x1, x2, x3, x4, x5, x6, x7 = _dequant_words(words, zero, scale_bits)
                # (column, position p = 4l + c, h, b1, b2) -> K = 32c + 16 b2 + 8 b1 + 2l + h (nibble 4h + 2b2 + b1).
                w = gl.join(gl.join(gl.join(x0, x4), gl.join(x1, x5)), gl.join(gl.join(x2, x6), gl.join(x3, x7)))
                w = gl.reshape(w, [ROWS, 4, 4, 2, 2, 2])  # (n, l, c, h, b1, b2)
                w = gl.permute(w, [0, 2, 5, 4, 1, 3])  # (n, c, b2, b1, l, h)
                w = gl.convert_layout(gl.reshape(w, [ROWS, _BLOCK_K]), w_layout, assert_trivial=True)

                acc = warpgroup_mma(w, a_bufs.index(s).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
                mbarrier.arrive(empty.index(s))  # after a partition barrier: the whole warpgroup is done with s
                it += 1

            if k_begin > 0:
                # A stream-K share that does not start the tile: leave the partial sums in this program's
                # scratch for the tile's owner (the program whose share starts it), then raise the flag.
                gl.store(partials_ptr + (c * 2 + WG) * (ROWS * BLOCK_M) + partial_offs, acc)
                gl.inline_asm_elementwise(_SIGNAL_PTX, "=r,l", [_per_thread(flags_ptr + c * 2 + WG)],
                                          dtype=gl.int32, is_pure=False, pack=1)
            else:
                if k_end < n_steps:
                    acc = _add_later_shares(acc, flags_ptr, partials_ptr, partial_offs, (tile - dp_tiles + 1) * n_steps,
                                            sk_steps, WG, BLOCK_M)
                # C[m, n] = acc[n, m]: 8 consecutive columns of C per thread, one 16-byte store.
                out = gl.convert_layout(acc.to(gl.float16), out_layout)
                offs_n = n0 + WG * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, out_layout))
                offs_m = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, out_layout))
                ptrs = c_ptr + gl.expand_dims(offs_m, 0) * N + gl.expand_dims(offs_n, 1)
                gl.store(ptrs, out, mask=gl.expand_dims(offs_m < M, 0))

    @gluon.jit
    def _second_consumer(args, ZERO_OFFSET: gl.constexpr, GROUP_SIZE: gl.constexpr, BLOCK_M: gl.constexpr,
                         STAGES: gl.constexpr, GROUP_M: gl.constexpr):
        _consumer(args, ZERO_OFFSET, GROUP_SIZE, BLOCK_M, STAGES, GROUP_M, 1)

    @gluon.jit
    def _loader(args, a_desc, w_desc, BLOCK_M: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):
        """TMA copies of A's tile and the weights' block for every K step of every segment, STAGES ahead."""
        (a_bufs, w_bufs, ready, empty, scales_ptr, zeros_ptr, c_ptr, scratch_ptr, M, N, K, dp_tiles,
         stride_sg, stride_zg) = args
        n_dp, sk_begin, sk_end, sk_steps, n_segments = _schedule(M, N, K, dp_tiles, BLOCK_M)
        it = 0
        for j in range(n_segments):
            m0, n0, w_row0, tile, k_begin, k_end = _segment(j, n_dp, sk_begin, sk_end, dp_tiles, K, M, N, BLOCK_M,
                                                            GROUP_M)
            for i in range(k_begin, k_end):
                s = it % STAGES
                # Buffers start free: the first pass waits on the phase before an mbarrier's first.
                mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
                mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + w_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(a_desc, [m0, i * _BLOCK_K], ready.index(s), a_bufs.index(s))
                tma.async_copy_global_to_shared(w_desc, [w_row0 + i * _BLOCK_K, 0], ready.index(s), w_bufs.index(s))
                it += 1

    @gluon.jit
    def _gptq_prefill_ws_kernel(a_desc, w_desc, scales_ptr, zeros_ptr, c_ptr, scratch_ptr, M, N, K, dp_tiles,
                                stride_sg, stride_zg, ZERO_OFFSET: gl.constexpr, GROUP_SIZE: gl.constexpr,
                                BLOCK_M: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):
        a_bufs = gl.allocate_shared_memory(gl.float16, [STAGES, BLOCK_M, _BLOCK_K], a_desc.layout)
        w_bufs = gl.allocate_shared_memory(gl.int32, [STAGES, _BLOCK_N, 16], w_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for s in gl.static_range(STAGES):
            mbarrier.init(ready.index(s), count=1)
            mbarrier.init(empty.index(s), count=2)  # one arrival per consumer warpgroup

        args = (a_bufs, w_bufs, ready, empty, scales_ptr, zeros_ptr, c_ptr, scratch_ptr, M, N, K, dp_tiles,
                stride_sg, stride_zg)
        gl.warp_specialize([(_consumer, (args, ZERO_OFFSET, GROUP_SIZE, BLOCK_M, STAGES, GROUP_M, 0)),
                            (_second_consumer, (args, ZERO_OFFSET, GROUP_SIZE, BLOCK_M, STAGES, GROUP_M)),
                            (_loader, (args, a_desc, w_desc, BLOCK_M, STAGES, GROUP_M))],
                           [4, 4], [240, 24])


_UNAVAILABLE: list[str] = []  # why the kernel failed once in this process (then every call falls back)


def supported(a2: Tensor, weight: GPTQWeight) -> bool:
    """Whether the warp-specialised kernel can run this call (see the module docstring)."""
    if _UNAVAILABLE or not (HAVE_GLUON and a2.is_cuda and a2.dtype == torch.float16
                            and weight.qweight_mma is not None):
        return False
    k, n, g = weight.k, weight.n, weight.group_size
    return (torch.cuda.get_device_capability(a2.device)[0] == 9 and k % BLOCK_K == 0 and n % BLOCK_N == 0
            and (g % BLOCK_K == 0 or g >= k) and weight.g_idx is None and weight.a_perm is None
            and a2.stride(1) == 1 and a2.data_ptr() % 16 == 0 and (a2.stride(0) * 2) % 16 == 0)


def mark_unavailable(error: BaseException) -> None:
    """Record that the kernel failed (e.g. a Triton whose Gluon API differs) and warn once."""
    if not _UNAVAILABLE:
        _UNAVAILABLE.append(f"{type(error).__name__}: {error}")
        warnings.warn(f"GPTQ warp-specialised prefill kernel unavailable, using the Triton kernel instead "
                      f"({_UNAVAILABLE[0][:300]})", RuntimeWarning, stacklevel=3)


MAX_BLOCK_M = 256  # the largest tile's rows: the stream-K scratch is sized for it
SCRATCH_BUFFERS: dict[tuple[int, int], Tensor] = {}  # (device index, stream) -> stream-K scratch, oldest first
SCRATCH_STREAMS = 8  # scratches kept (17 MB each on an H100): code that makes a stream per call must not grow


def stream_k_plan(m: int, n: int, block_m: int, programs: int) -> tuple[int, int]:
    """(grid, dp_tiles) of a stream-K launch on ``programs`` SMs: all but the last one or two waves of
    tiles go whole to programs (tile c + w * programs), the rest are shared out in K steps, so that every
    program gets the same number of steps and no wave runs partly empty."""
    tiles = -(-m // block_m) * (n // BLOCK_N)
    full_waves = tiles // programs
    dp_tiles = tiles if tiles % programs == 0 else max(full_waves - 1, 0) * programs
    return programs, dp_tiles


def flag_words(programs: int) -> int:
    """The 32-bit words at the head of a stream-K scratch that hold its flags."""
    return -(-2 * programs // 64) * 64  # a flag per consumer warpgroup, padded to 256 bytes


def scratch(device: torch.device, stream: int, programs: int) -> Tensor:
    """Stream-K scratch for launches on ``stream``: a zeroed flag per (program, consumer warpgroup), then
    the partial sums (the kernel leaves the flags zero when it ends). One per stream, so launches on
    different streams never share flags; a launch being captured into a CUDA graph before any eager one on
    its stream gets its own, with the zeroing captured too."""
    buf = SCRATCH_BUFFERS.get((device.index, stream))
    if buf is None:
        words = flag_words(programs) + programs * 2 * 64 * MAX_BLOCK_M
        if torch.cuda.is_current_stream_capturing():
            buf = torch.empty(words, dtype=torch.float32, device=device)
            buf[: flag_words(programs)].zero_()
            return buf
        if len(SCRATCH_BUFFERS) >= SCRATCH_STREAMS:
            # Freed in stream order: the caching allocator hands its memory only to later work on that
            # stream, which runs after every launch that used it.
            del SCRATCH_BUFFERS[next(iter(SCRATCH_BUFFERS))]
        buf = SCRATCH_BUFFERS[(device.index, stream)] = torch.zeros(words, dtype=torch.float32, device=device)
    return buf


def scratch_arg(c: Tensor, programs: int, stream: int | None = None) -> Tensor:
    """The kernel's scratch argument for a launch writing C: with stream-K (``programs`` > 0) the
    scratch of ``stream`` (default: the current one), without it C (the kernel never reads it)."""
    if not programs:
        return c
    return scratch(c.device, torch.cuda.current_stream(c.device).cuda_stream if stream is None else stream, programs)


def launch_spec(m: int, weight: GPTQWeight, block_m: int, stages: int, stream_k: bool = False, group_m: int = 8):
    """(kernel, grid, args, options, a_descriptor): ``args`` holds None for A's descriptor (position 0,
    made per call by ``a_descriptor(a2)``: it holds A's address), for C (position 4) and for the
    stream-K scratch (position 5: :func:`scratch`, or any tensor without stream-K)."""
    k, n = weight.k, weight.n
    a_layout = gl.NVMMASharedLayout.get_default_for([block_m, BLOCK_K], gl.float16)
    words = weight.qweight_mma.view(-1, 16)  # (N / 128, K / 128, 128, 16): one 8 KB block per 16 x 128 rows
    w_desc = TensorDescriptor(words, list(words.shape), [16, 1], [BLOCK_N, 16],
                              gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2))
    scales = weight.scales if weight.scales.stride(1) == 1 else weight.scales.contiguous()
    tiles = -(-m // block_m) * (n // BLOCK_N)
    if stream_k:
        programs, dp_tiles = stream_k_plan(m, n, block_m, sm_count(weight.qweight_mma.device))
    else:
        programs = dp_tiles = tiles  # a tile per program
    args = [None, w_desc, scales, weight.qzeros, None, None, m, n, k, dp_tiles, scales.stride(0),
            weight.qzeros.stride(0), weight.zero_offset, weight.group_size, block_m, stages, group_m]
    block = [block_m, BLOCK_K]

    def a_descriptor(a2: Tensor):
        return TensorDescriptor(a2, [m, k], [a2.stride(0), 1], block, a_layout)
    # 4 warps per partition; maxnreg 168 x 12 warps is the register file, shared out by setmaxnreg
    # as 240 for each consumer warpgroup and 24 for the loader.
    return _gptq_prefill_ws_kernel, (programs,), args, dict(num_warps=4, maxnreg=168), a_descriptor


def sm_count(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 132


def gptq_matmul_ws(a2: Tensor, weight: GPTQWeight, block_m: int = 256, stages: int = 3,
                   stream_k: bool = False) -> Tensor:
    """``a2 @ W`` by the warp-specialised kernel with an explicit tile (benchmarks, tests); the caller
    checks :func:`supported`. ``gptq_matmul`` picks this kernel and its tile by itself (configs.ws_tile)."""
    kernel, grid, args, options, a_descriptor = launch_spec(a2.shape[0], weight, block_m, stages, stream_k)
    c = a2.new_empty((a2.shape[0], weight.n))
    args[0], args[4] = a_descriptor(a2), c
    args[5] = scratch_arg(c, grid[0] if stream_k else 0)
    kernel[grid](*args, **options)
    if weight.bias is not None:
        c += weight.bias
    return c
