"""The quantization track, puzzles 13-18: each reference passes at every size, each starter fails, and each
classic mistake (a known-wrong kernel below) is caught for its own reason."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from judging import grade

from puzzles import on_gpu, test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog
from puzzles.course.solution_source import starter_source

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

TRACK = [catalog.get(n) for n in range(13, 19)]
# The verdicts below rely on the interpreter's recording: compiled on a GPU, an out-of-bounds load goes unseen and a
# zero-initialised output cannot tell "never written" from "wrong" (tests/running/test_gpu.py covers the references
# there).
interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


# -- every reference passes, every starter fails -----------------------------------------------------------


@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_reference_passes_at_every_size(p):
    result = test(p.reference(), p.spec, quiet=True)
    assert result.passed, str(result)
    assert len(result.outcomes) == len(p.sizes)


@interpreted_only
@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_starter_fails(p, load_kernel):
    starter = load_kernel(starter_source(p), p.kernel_name)
    result = test(starter, p.spec, quiet=True)
    assert not result.passed
    assert result.first_failure.status == "unwritten", str(result)
    assert "never written" in result.reason()


@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_a_size_is_ragged(p):
    """At least one size leaves a partial block (or a partial band of tiles, or a partial round of K chunks)."""
    def ragged(s):
        if p.number == 16:
            return -(-s["M"] // s["BM"]) % s["GROUP_M"] != 0
        pairs = [("N0", "B0"), ("N1", "B1"), ("K", "BK"), ("N", "BN"), ("M", "BM")]
        if any(n in s and b in s and s[n] % s[b] for n, b in pairs):
            return True
        return "SPLIT_K" in s and s["K"] % (s["BK"] * s["SPLIT_K"]) != 0
    assert any(ragged(s) for s in p.sizes[1:]) or ragged(p.sizes[0])


# -- the specs agree with each other and with the statements ------------------------------------------------


def test_pack_spec_bytes_are_the_two_per_byte_form():
    from puzzles.course.catalog.p13_pack_int4 import int4_values, pack_int4_spec

    x = torch.randint(-128, 128, (3, 16), dtype=torch.int8)
    q = (int4_values(x) + 8).to(torch.uint8)
    assert int(q.min()) >= 0 and int(q.max()) <= 15
    two_per_byte = q[:, 0::2] | (q[:, 1::2] << 4)
    assert torch.equal(pack_int4_spec(x).view(torch.uint8), two_per_byte)
    small = torch.tensor([[-8, -1, 0, 7, 1, 2, 3, 4]], dtype=torch.int8)
    assert pack_int4_spec(small).item() == 0xC_B_A_9_F_8_7_0 - 2**32


def test_unpack_inverts_pack_on_the_transposed_layout():
    from puzzles.course.catalog.p13_pack_int4 import int4_values, pack_int4_spec
    from puzzles.course.catalog.p14_unpack_int4 import unpack_int4_spec

    x = torch.randint(-128, 128, (5, 24), dtype=torch.int8)  # 5 columns of K = 24
    qweight = pack_int4_spec(x).T.contiguous()  # packed along K: K/8 x N
    assert torch.equal(unpack_int4_spec(qweight), int4_values(x).T.to(torch.int8))


def test_grouped_order_spec_is_a_permutation_matching_swizzle2d_docs():
    from puzzles.course.catalog.p16_grouped_tile_order import grouped_order_spec

    # tl.swizzle2d's docstring example: a 4 x 4 grid in groups of 2.
    tiles = grouped_order_spec(M=4, N=4, BM=1, BN=1, GROUP_M=2)
    pid_of = torch.empty(4, 4, dtype=torch.int64)
    pid_of[tiles[:, 0].long(), tiles[:, 1].long()] = torch.arange(16)
    assert pid_of.tolist() == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    tiles = grouped_order_spec(M=7, N=5, BM=1, BN=1, GROUP_M=3)  # a short last band
    assert len({tuple(t) for t in tiles.tolist()}) == 35 and int(tiles[:, 0].max()) == 6


def test_gptq_spec_follows_the_statement_element_by_element():
    from puzzles.course.catalog.p18_gptq_splitk import gptq_matmul_spec

    g, k_size, n_size = 8, 16, 8
    a = torch.randn(2, k_size).half()
    qweight = torch.randint(-(2**31), 2**31, (k_size // 8, n_size), dtype=torch.int64).to(torch.int32)
    scales = torch.rand(k_size // g, n_size).half()
    qzeros = torch.randint(-(2**31), 2**31, (k_size // g, n_size // 8), dtype=torch.int64).to(torch.int32)
    w = torch.empty(k_size, n_size)
    for k in range(k_size):
        for n in range(n_size):
            q = (int(qweight[k // 8, n]) >> 4 * (k % 8)) & 0xF
            zero = (int(qzeros[k // g, n // 8]) >> 4 * (n % 8)) & 0xF
            w[k, n] = (q - (zero + 1)) * float(scales[k // g, n])
    torch.testing.assert_close(gptq_matmul_spec(a, qweight, scales, qzeros), (a.float() @ w).half())


# -- known-wrong kernels, one classic mistake each --------------------------------------------------------


@triton.jit
def pack_nibbles_reversed(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    BW: tl.constexpr = B1 // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * BW + tl.arange(0, BW)
    nibble = tl.arange(0, 8)
    ok = (rows < N0)[:, None] & (words < N1 // 8)[None, :]
    x = tl.load(x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nibble[None, :])[None, :, :],
                mask=ok[:, :, None], other=0)
    q = (x.to(tl.int32) + 8) & 0xF
    packed = tl.sum(q << ((7 - nibble) * 4)[None, None, :], axis=2)  # high nibble first
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=ok)


@triton.jit
def pack_without_nibble_mask(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    BW: tl.constexpr = B1 // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * BW + tl.arange(0, BW)
    nibble = tl.arange(0, 8)
    ok = (rows < N0)[:, None] & (words < N1 // 8)[None, :]
    x = tl.load(x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nibble[None, :])[None, :, :],
                mask=ok[:, :, None], other=0)
    q = x.to(tl.int32) + 8  # the junk high nibble spills into the next value
    packed = tl.sum(q << (nibble * 4)[None, None, :], axis=2)
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=ok)


@triton.jit
def pack_without_word_mask(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    BW: tl.constexpr = B1 // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * BW + tl.arange(0, BW)
    nibble = tl.arange(0, 8)
    ok = (rows < N0)[:, None] & (words >= 0)[None, :]  # rows only: a ragged last block runs past N1
    x = tl.load(x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nibble[None, :])[None, :, :],
                mask=ok[:, :, None], other=0)
    packed = tl.sum(((x.to(tl.int32) + 8) & 0xF) << (nibble * 4)[None, None, :], axis=2)
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=ok)


@triton.jit
def unpack_masking_before_shifting(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    ok = (k < K)[:, None] & (n < N)[None, :]
    words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=ok, other=0)
    shift = ((k % 8) * 4)[:, None]
    q = (words & (0xF << shift)) >> shift  # the top nibble is the sign: the arithmetic shift extends it
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8), mask=ok)


@triton.jit
def unpack_along_n(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    ok = (k < K)[:, None] & (n < N)[None, :]
    # Puzzle 12's layout (packed along the row) read into puzzle 14's buffer.
    words = tl.load(qweight_ptr + k[:, None] * (N // 8) + (n // 8)[None, :], mask=ok, other=0)
    q = (words >> ((n % 8) * 4)[None, :]) & 0xF
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8), mask=ok)


@triton.jit
def gemv_without_k_mask(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(n < N)[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)


@triton.jit
def gemv_weight_read_as_n_by_k(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + n[None, :] * K + k[:, None], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)


@triton.jit
def grouped_order_row_major(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    tl.store(z_ptr + 2 * pid, pid // tiles_n)  # ignores GROUP_M: the plain row-major order
    tl.store(z_ptr + 2 * pid + 1, pid % tiles_n)


@triton.jit
def grouped_order_full_last_band(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                                 GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    per_band = GROUP_M * tl.cdiv(N, BN)
    first_m = (pid // per_band) * GROUP_M
    i = pid % per_band
    tl.store(z_ptr + 2 * pid, first_m + i % GROUP_M)  # the last band may have fewer than GROUP_M rows
    tl.store(z_ptr + 2 * pid + 1, i // GROUP_M)


@triton.jit
def grouped_order_swizzle2d(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    tile_m, tile_n = tl.swizzle2d(pid // tiles_n, pid % tiles_n, tiles_m, tiles_n, GROUP_M)
    tl.store(z_ptr + 2 * pid, tile_m)
    tl.store(z_ptr + 2 * pid + 1, tile_n)


@triton.jit
def _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 SPLIT_K: tl.constexpr, MASK_K: tl.constexpr, ALL_K: tl.constexpr, WRITE: tl.constexpr):
    """Puzzle 17's reference with one mistake switched on by a flag (kept in one place so only the flag differs).

    MASK_K=0: no mask along K; ALL_K=1: every part reduces all of K; WRITE: 0 atomic add, 1 plain store,
    2 load-add-store."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    # ALL_K forgets the part: every one of the SPLIT_K programs adds the whole product.
    for k0 in range(tl.program_id(2) * BK * (1 - ALL_K), K, BK * (SPLIT_K - ALL_K * (SPLIT_K - 1))):
        k = k0 + tl.arange(0, BK)
        k_in = (k < K) | (MASK_K == 0)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & k_in[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=k_in[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(a, b)
    tile = z_ptr + m[:, None] * N + n[None, :]
    tile_in = (m < M)[:, None] & (n < N)[None, :]
    if WRITE == 0:
        tl.atomic_add(tile, acc, mask=tile_in)
    elif WRITE == 1:  # each part overwrites the others: only the last part's share of K survives
        tl.store(tile, acc, mask=tile_in)
    else:  # right in the interpreter (programs run one by one), a lost update on a GPU
        tl.store(tile, tl.load(tile, mask=tile_in) + acc, mask=tile_in)


@triton.jit
def splitk_without_k_mask(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 0, 0, 0)


@triton.jit
def splitk_store_instead_of_add(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 1, 0, 1)


@triton.jit
def splitk_load_add_store(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 1, 0, 2)


@triton.jit
def splitk_every_part_takes_all_of_k(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                     BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 1, 1, 0)


@triton.jit
def _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, SPLIT_K: tl.constexpr, PLUS_ONE: tl.constexpr, ZEROS_ALONG_N: tl.constexpr,
               MASK_K: tl.constexpr, GROUP_OF: tl.constexpr):
    """The reference with one mistake switched on by a flag (kept in one place so only the flag differs)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        if MASK_K:
            k_in = k < K
        else:  # the ragged last chunk reads past K
            k_in = k >= 0
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & k_in[None, :], other=0.0)
        w_in = k_in[:, None] & (n < N)[None, :]
        words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=w_in, other=0)
        q = (words >> ((k % 8) * 4)[:, None]) & 0xF
        if GROUP_OF == 1:  # a group of 64 rows, whatever G is
            g = k // 64
        elif GROUP_OF == 2:  # the chunk's first row's group for every row of the chunk
            g = tl.zeros([BK], dtype=tl.int32) + k0 // G
        else:
            g = k // G
        scale = tl.load(scales_ptr + g[:, None] * N + n[None, :], mask=w_in, other=0.0)
        if ZEROS_ALONG_N:
            zero_words = tl.load(qzeros_ptr + g[:, None] * (N // 8) + (n // 8)[None, :], mask=w_in, other=0)
            zero = (zero_words >> ((n % 8) * 4)[None, :]) & 0xF
        else:  # treats qzeros like qweight: the nibble chosen by k, not by n
            zero_words = tl.load(qzeros_ptr + g[:, None] * (N // 8) + (n // 8)[None, :], mask=w_in, other=0)
            zero = (zero_words >> ((k % 8) * 4)[:, None]) & 0xF
        w = ((q - (zero + PLUS_ONE)).to(tl.float32) * scale.to(tl.float32)).to(tl.float16)
        acc += tl.dot(a, w)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def gptq_without_plus_one(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                          BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, 0, True, True, 0)


@triton.jit
def gptq_zeros_packed_along_k(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K,
               1, False, True, 0)


@triton.jit
def gptq_without_k_mask(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                        BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K,
               1, True, False, 0)


@triton.jit
def gptq_group_of_64(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                     BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, 1, True, True, 1)


@triton.jit
def gptq_group_of_chunk_start(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, 1, True, True, 2)


@triton.jit
def _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0: tl.constexpr,
                    B1: tl.constexpr, B_MID: tl.constexpr, WEIGHT_BITS: tl.constexpr, SHIFT_BITS: tl.constexpr):
    """Puzzle 12's reference with the bits between two nibbles as flags (4: right; 8: a byte, the slip)."""
    WORDS: tl.constexpr = B_MID // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        group = k0 // 8 + tl.arange(0, WORDS)
        words = tl.load(weight_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=(rows < N0)[:, None], other=0)
        w = (words[:, :, None] >> (tl.arange(0, 8) * WEIGHT_BITS)[None, None, :]) & 0xF
        scale = tl.load(scale_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=(rows < N0)[:, None], other=0.0)
        shift_words = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (group // 8)[None, :],
                              mask=(rows < N0)[:, None], other=0)
        shift = (shift_words >> ((group % 8) * SHIFT_BITS)[None, :]) & 0xF
        dequantized = scale[:, :, None] * (w - shift[:, :, None]).to(tl.float32)
        k = k0 + tl.arange(0, B_MID)
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=(cols < N1)[None, :], other=0.0)
        acc += tl.dot(tl.reshape(dequantized, (B0, B_MID)), activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=(rows < N0)[:, None] & (cols < N1)[None, :])


@triton.jit
def quant_dot_weights_by_byte(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                              B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, B1, B_MID, 8, 4)


@triton.jit
def quant_dot_all_by_byte(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                          B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, B1, B_MID, 8, 8)


@triton.jit
def quant_dot_by_nibble(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                        B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, B1, B_MID, 4, 4)


def _size(result):
    return result.first_failure.sizes


def _wrong_at_the_canonical_size(number, kernel):
    """The mistake gives wrong values already at the puzzle's own size (not an error)."""
    result = grade(number, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert _size(result) == catalog.get(number).canonical and "elements wrong" in result.reason()


def out_of_bounds_on_a_ragged_block(number, kernel, dim, block):
    """A missing mask: the first failing size has a ragged last block along `dim`; the reason."""
    result = grade(number, kernel)
    assert result.first_failure.status == "out of bounds", str(result)
    assert _size(result)[dim] % _size(result)[block] != 0  # the canonical size has no ragged block
    return result.reason()


@pytest.mark.parametrize("kernel", [pack_nibbles_reversed, pack_without_nibble_mask], ids=lambda k: k.fn.__name__)
def test_pack_mistakes_give_wrong_words(kernel):
    _wrong_at_the_canonical_size(13, kernel)


@interpreted_only
def test_pack_without_word_mask_runs_out_of_bounds_on_a_ragged_row():
    reason = out_of_bounds_on_a_ragged_block(13, pack_without_word_mask, "N1", "B1")
    assert "out-of-bounds" in reason and "of x[" in reason


def test_unpack_masking_before_shifting_breaks_the_top_nibble():
    result = grade(14, unpack_masking_before_shifting)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    # Only nibble 7 holds the sign bit: the rows k with k % 8 == 7 come out 16 too small when it is set.
    assert all(m.index[0] % 8 == 7 and m.got == m.expected - 16 for m in failure.mismatches)


def test_unpack_along_the_wrong_axis():
    result = grade(14, unpack_along_n)
    assert result.first_failure.status == "wrong", str(result)
    assert "elements wrong" in result.reason()


@interpreted_only
def test_gemv_without_k_mask_reads_past_the_vector():
    assert "load of x[" in out_of_bounds_on_a_ragged_block(15, gemv_without_k_mask, "K", "BK")


def test_gemv_with_the_transposed_layout():
    result = grade(15, gemv_weight_read_as_n_by_k)
    assert result.first_failure.status == "wrong", str(result)


def test_grouped_order_that_ignores_the_group_size():
    result = grade(16, grouped_order_row_major)
    assert result.first_failure.status == "wrong", str(result)
    assert result.first_failure.mismatches[0].index == (1, 0)  # program 1 goes down, not right


def test_grouped_order_that_assumes_a_full_last_band():
    result = grade(16, grouped_order_full_last_band)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    tiles_m = -(-failure.sizes["M"] // failure.sizes["BM"])
    assert tiles_m % failure.sizes["GROUP_M"] != 0
    first_in_last_band = (tiles_m // failure.sizes["GROUP_M"]) * failure.sizes["GROUP_M"] * -(
        -failure.sizes["N"] // failure.sizes["BN"])
    assert all(m.index[0] >= first_in_last_band for m in failure.mismatches)


def test_grouped_order_with_swizzle2d_passes():
    assert grade(16, grouped_order_swizzle2d).passed


@interpreted_only
def test_splitk_without_k_mask():
    result = grade(17, splitk_without_k_mask)
    assert result.first_failure.status == "out of bounds", str(result)
    size = _size(result)
    assert size["K"] % (size["BK"] * size["SPLIT_K"]) != 0 and "out-of-bounds" in result.reason()


@pytest.mark.parametrize("kernel", [splitk_store_instead_of_add, splitk_load_add_store], ids=lambda k: k.fn.__name__)
def test_splitk_plain_stores_into_a_shared_tile_are_a_race(kernel):
    result = grade(17, kernel)
    failure = result.first_failure
    if on_gpu() and failure.status == "wrong":
        # Compiled, the race gives wrong sums; naming it needs the interpreter pass, which an
        # older Triton (3.6) cannot run on this kernel's loop: the verdict says so.
        assert "access check under Triton's interpreter could not run" in failure.stdout
        return
    assert failure.status == "race", str(result)
    assert "tl.atomic_add" in failure.reason() and "tl.store" in failure.error.source


def test_splitk_where_every_part_reduces_all_of_k():
    result = grade(17, splitk_every_part_takes_all_of_k)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    m = failure.mismatches[0]
    assert m.got == pytest.approx(failure.sizes["SPLIT_K"] * m.expected, rel=1e-3)


@pytest.mark.parametrize("kernel", [gptq_without_plus_one, gptq_zeros_packed_along_k], ids=lambda k: k.fn.__name__)
def test_gptq_zero_point_mistakes(kernel):
    _wrong_at_the_canonical_size(18, kernel)
