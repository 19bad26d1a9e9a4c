"""Puzzle 31 (pipelining and warp specialization): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists right answers in other styles than the reference (`acc +=` with the tiles named; a loop that counts
chunks and loads at `k * BK`). The others are graded in tests/course/test_pipelined_track.py, each failing for the
reason its docstring gives. `# LOOP_LINE` marks the line a verdict names.

`UNPIPELINED` is this puzzle's slow kernel (num_stages=1, no warp specialization): right values, one buffer per tile,
for the lead's GPU timings. It is not in `SLOW` (tests/grading/test_efficiency.py's right-but-slow kernels): the
compiled rule fails it, and the efficiency model, which reads the interpreter's run, cannot see a pipeline."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def pipelined_acc_plus_equals(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                              NUM_STAGES: tl.constexpr):
    """Right: the tiles named, `acc += tl.dot(x_tile, y_tile)`."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=NUM_STAGES, warp_specialize=True):
        x_tile = x_desc.load([m0, k0])
        y_tile = y_desc.load([k0, n0])
        acc += tl.dot(x_tile, y_tile)
    z_desc.store([m0, n0], acc.to(z_desc.dtype))


@triton.jit
def pipelined_counting_chunks(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                              NUM_STAGES: tl.constexpr):
    """Right: the loop counts chunks and each load starts at `k * BK` elements."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=NUM_STAGES, warp_specialize=True):
        acc = tl.dot(x_desc.load([m0, k * BK]), y_desc.load([k * BK, n0]), acc)
    z_desc.store([m0, n0], acc.to(tl.float16))


@triton.jit
def pipelined_not_warp_specialized(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                   BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Wrong (right values): pipelined in NUM_STAGES buffers, but no warp_specialize: the compiled loop has no
    ttg.warp_specialize."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=NUM_STAGES):  # LOOP_LINE
        acc = tl.dot(x_desc.load([m0, k0]), y_desc.load([k0, n0]), acc)
    z_desc.store([m0, n0], acc.to(tl.float16))


@triton.jit
def pipelined_default_stages(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                             NUM_STAGES: tl.constexpr):
    """Wrong (right values): warp-specialized but num_stages not passed: Triton's default 3 buffers, where the
    canonical size's NUM_STAGES is 4."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, warp_specialize=True):  # LOOP_LINE
        acc = tl.dot(x_desc.load([m0, k0]), y_desc.load([k0, n0]), acc)
    z_desc.store([m0, n0], acc.to(tl.float16))


@triton.jit
def unpipelined(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                NUM_STAGES: tl.constexpr):
    """Slow (right values): num_stages=1 and no warp specialization: one buffer per tile, each chunk's copies wait
    for the previous chunk's tl.dot. The compiled rule fails it ("is not pipelined")."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=1):  # LOOP_LINE
        acc = tl.dot(x_desc.load([m0, k0]), y_desc.load([k0, n0]), acc)
    z_desc.store([m0, n0], acc.to(tl.float16))


@triton.jit
def pointer_loads_warp_specialized(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                   BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Wrong (right values under the interpreter): tl.load of pointers in a warp-specialized loop; Triton 3.7's
    NVGPUWarpSpecialization pass fails on it ("unsupported load type for producer commit")."""
    m = tl.program_id(1) * BM + tl.arange(0, BM)
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=NUM_STAGES, warp_specialize=True):  # LOOP_LINE
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        y = tl.load(y_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def pipelined_last_chunk_only(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                              NUM_STAGES: tl.constexpr):
    """Slip: `acc = tl.dot(x_tile, y_tile)` replaces the sum: z is the last chunk's product."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=NUM_STAGES, warp_specialize=True):
        acc = tl.dot(x_desc.load([m0, k0]), y_desc.load([k0, n0]))
    z_desc.store([m0, n0], acc.to(tl.float16))


@triton.jit
def pipelined_coordinates_in_chunks(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                    BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Wrong: the loop counts chunks and loads at [m0, k], [k, n0], as if a descriptor counted tiles: column k is no
    multiple of 16 bytes, and the interpreter stops at the load, told that a descriptor counts elements."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=NUM_STAGES, warp_specialize=True):
        acc = tl.dot(x_desc.load([m0, k]), y_desc.load([k, n0]), acc)  # LOAD_LINE
    z_desc.store([m0, n0], acc.to(tl.float16))


@triton.jit
def pipelined_swapped_program_ids(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                  BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Wrong: m0 from program_id(0), n0 from program_id(1): axis 0 walks z's columns; where z has more tile rows
    than columns, the last rows are never written (the grader names them and the program_id axes)."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=NUM_STAGES, warp_specialize=True):
        acc = tl.dot(x_desc.load([m0, k0]), y_desc.load([k0, n0]), acc)
    z_desc.store([m0, n0], acc.to(tl.float16))


@triton.jit
def pipelined_y_at_swapped_corner(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                  BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Slip: y's tile loaded at [n0, k0]."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=NUM_STAGES, warp_specialize=True):
        acc = tl.dot(x_desc.load([m0, k0]), y_desc.load([n0, k0]), acc)
    z_desc.store([m0, n0], acc.to(tl.float16))


CORRECT = (pipelined_acc_plus_equals, pipelined_counting_chunks)
UNPIPELINED = (unpipelined,)  # the slow kernel for GPU timings (see the module's docstring)
