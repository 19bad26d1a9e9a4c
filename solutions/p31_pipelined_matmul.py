"""Puzzle 31 reference: a float16 matmul whose K loop is software-pipelined in NUM_STAGES shared-memory buffers
and warp-specialized (a producer warp issues the tiles' TMA copies, consumer warps run tl.dot), its tiles loaded
and stored through tensor descriptors, which handle the ragged edges."""

import triton
import triton.language as tl


@triton.jit
def pipelined_matmul_kernel(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                            NUM_STAGES: tl.constexpr):
    # BEGIN SOLUTION
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0 = tl.program_id(1) * BM
    n0 = tl.program_id(0) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    # NUM_STAGES chunks in flight: the copies of chunks k0 + BK, ... overlap this chunk's tl.dot.
    for k0 in tl.range(0, K, BK, num_stages=NUM_STAGES, warp_specialize=True):
        acc = tl.dot(x_desc.load([m0, k0]), y_desc.load([k0, n0]), acc)
    z_desc.store([m0, n0], acc.to(tl.float16))
    # END SOLUTION
