"""Common slips, computed: what the spec gives with one mistake in it (the quantization track's, and the
first puzzles' blocks, the loops over a long axis of puzzles 7, 8, 9, 11 and 17, puzzle 19's strides and
puzzle 21's update).

A wrong matmul output says nothing about its cause: every element is off by some amount. So a puzzle
may list `Mistake`s (its catalog record, `likely_mistakes`): each is a sentence for the learner and one
of the functions below, which computes the spec's output with that one slip (the zero point left out,
the word masked before the shift, ...) from the same inputs. When a wrong output matches one of them,
the verdict names the slip. Each function gets the spec's inputs by name and the size, and returns the
output the slip produces, in the spec's dtype and shape.
"""

from __future__ import annotations

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]
NIBBLE_SHIFTS = torch.arange(8, dtype=torch.int32) * 4


BYTE_SHIFTS = torch.arange(8, dtype=torch.int32) * 8  # the slip of 8 bits a nibble


def _nibbles(words: Tensor, dim: int, *, mask_first: bool = False, shifts: Tensor = NIBBLE_SHIFTS) -> Tensor:
    """The 8 nibbles of each int32 word along `dim`, low nibble first; `mask_first`: the slip
    `(word & 0xF) >> 4n` (only nibble 0 survives); `shifts=BYTE_SHIFTS`: the slip `(word >> 8n) & 0xF`,
    whose shifts of 32 bits and more fill with the sign bit, as torch and a GPU do."""
    words = words.movedim(dim, -1)[..., None]
    values = ((words & 0xF) >> shifts) if mask_first else ((words >> shifts) & 0xF)
    return values.flatten(-2).movedim(-1, dim)


# -- puzzles 3, 5 and 6: blocks of two vectors ---------------------------------------------------------

def outer_add_without_axes(i: Inputs, sizes: Sizes) -> Tensor:
    """x + y as two 1-D blocks (element by element), the same row stored into every row of z; where the lengths
    differ the kernel stops on the shapes instead (the right output is returned there, never named)."""
    x, y = i["x"], i["y"]
    if x.numel() != y.numel():
        return x[None, :] + y[:, None]
    return (x + y)[None, :].expand(y.numel(), x.numel()).contiguous()


def mul_without_relu(i: Inputs, sizes: Sizes) -> Tensor:
    return i["x"][None, :] * i["y"][:, None]


def backward_gate_from_x(i: Inputs, sizes: Sizes) -> Tensor:
    """relu'(x) where the relu's input is x · y: the gate taken from x alone."""
    y = i["y"][:, None]
    return (i["x"] > 0).to(i["x"].dtype) * y * i["dz"]


def backward_without_y(i: Inputs, sizes: Sizes) -> Tensor:
    """relu'(x · y) · dz: the factor y of the chain rule left out."""
    return (i["x"] * i["y"][:, None] > 0).to(i["x"].dtype) * i["dz"]


# -- puzzles 7, 8 and 11: a loop over a long axis in chunks --------------------------------------------

def _last_chunk_start(length: int, block: int) -> int:
    return (length - 1) // block * block


def sum_last_chunk_only(i: Inputs, sizes: Sizes) -> Tensor:
    """The running sum set, not added to, in every chunk (or created inside the loop): the last chunk is left."""
    return i["x"].double()[:, _last_chunk_start(sizes["T"], sizes["B1"]):].sum(1).float()


def sum_first_chunk_repeated(i: Inputs, sizes: Sizes) -> Tensor:
    """The chunk's offsets without j0 (tl.arange(0, B1) alone): every step reads the first chunk again."""
    steps = -(-sizes["T"] // sizes["B1"])
    return (i["x"].double()[:, :sizes["B1"]].sum(1) * steps).float()


def sum_without_axis(i: Inputs, sizes: Sizes) -> Tensor:
    """tl.sum(x) without axis=1: the whole B0 × B1 block summed, so each row gets its program's rows' total."""
    rows = i["x"].double().sum(1)
    block = sizes["B0"]
    programs = torch.arange(rows.numel()) // block
    return torch.zeros(int(programs.max()) + 1, dtype=torch.float64).index_add(0, programs, rows)[programs].float()


def sum_rows_n1_apart(i: Inputs, sizes: Sizes) -> Tensor:
    """Row r read at x_ptr + r * N1 (the unused N1 taken for the row stride) instead of r * T."""
    x = i["x"].double().flatten()
    at = torch.arange(sizes["N0"])[:, None] * sizes["N1"] + torch.arange(sizes["T"])[None, :]
    return x[at.clamp(max=x.numel() - 1)].sum(1).float()  # past x's end: the out-of-bounds report says it


def softmax_padding_in_sum(i: Inputs, sizes: Sizes) -> Tensor:
    """The sum of exp loaded with other=0 instead of -inf: each masked-off lane of the last chunk adds exp(0 - max)."""
    x = i["x"].double()
    top = x.amax(1, keepdim=True)
    padding = -(-sizes["T"] // sizes["B1"]) * sizes["B1"] - sizes["T"]
    e = (x - top).exp()
    return (e / (e.sum(1, keepdim=True) + padding * (-top).exp())).float()


def softmax_sum_not_rescaled(i: Inputs, sizes: Sizes) -> Tensor:
    """The online softmax's running sum kept when the running maximum grows (not scaled by exp(m - m_new)):
    each chunk's exps are relative to the maximum so far, the final division to the row's maximum."""
    x = i["x"].double()
    block, total, top = sizes["B1"], torch.zeros(x.shape[0], 1, dtype=torch.float64), None
    for start in range(0, x.shape[1], block):
        chunk = x[:, start:start + block]
        top = chunk.amax(1, keepdim=True) if top is None else torch.maximum(top, chunk.amax(1, keepdim=True))
        total = total + (chunk - top).exp().sum(1, keepdim=True)
    return ((x - top).exp() / total).float()


def matmul_last_chunk_only(i: Inputs, sizes: Sizes) -> Tensor:
    """acc = tl.dot(...) instead of acc += tl.dot(...): the last chunk of MID is left."""
    start = _last_chunk_start(sizes["MID"], sizes["B_MID"])
    return (i["x"].double()[..., start:] @ i["y"].double()[..., start:, :]).float()


def matmul_first_chunk_repeated(i: Inputs, sizes: Sizes) -> Tensor:
    """The chunk's offsets without k0: every step multiplies the first chunk of MID again."""
    block, steps = sizes["B_MID"], -(-sizes["MID"] // sizes["B_MID"])
    return (i["x"].double()[..., :block] @ i["y"].double()[..., :block, :] * steps).float()


def _flash(i: Inputs, sizes: Sizes, *, rescale_acc: bool = True, mask_scores: bool = True,
           keep_max: bool = True, divide: bool = True, max_start: float = -torch.inf,
           dtype: torch.dtype = torch.float64) -> Tensor:
    """Puzzle 9's one pass over chunks of B1 keys, as a kernel computes it, with one step left out: the running
    weighted sum not rescaled, the key lanes past T scored (k = 0, v = 0: a score of 0 that counts in the
    denominator), the running maximum never kept (m = m_new forgotten), no final division by l, or the
    maximum started at `max_start` (in float32, whose exp underflows to 0 as the kernel's does)."""
    q, k, v = (i[name].to(dtype) for name in ("q", "k", "v"))
    block, length = sizes["B1"], sizes["T"]
    padded = -(-length // block) * block
    k, v = torch.nn.functional.pad(k, (0, padded - length)), torch.nn.functional.pad(v, (0, padded - length))
    m = torch.full_like(q, max_start)
    total, acc = torch.zeros_like(q), torch.zeros_like(q)
    for start in range(0, padded, block):
        scores = q[:, None] * k[None, start:start + block]
        if mask_scores:
            scores[:, max(0, length - start):] = -torch.inf
        m_new = torch.maximum(m, scores.amax(1))
        rescale = (m - m_new).exp()
        weights = (scores - m_new[:, None]).exp()
        total = total * rescale + weights.sum(1)
        acc = (acc * rescale if rescale_acc else acc) + (weights * v[None, start:start + block]).sum(1)
        m = m_new if keep_max else m
    return (acc / total if divide else acc).float()


def flash_acc_not_rescaled(i: Inputs, sizes: Sizes) -> Tensor:
    return _flash(i, sizes, rescale_acc=False)


def flash_padding_scored(i: Inputs, sizes: Sizes) -> Tensor:
    return _flash(i, sizes, mask_scores=False)


def flash_max_not_kept(i: Inputs, sizes: Sizes) -> Tensor:
    return _flash(i, sizes, keep_max=False)


def flash_not_divided(i: Inputs, sizes: Sizes) -> Tensor:
    return _flash(i, sizes, divide=False)


def flash_max_starts_at_zero(i: Inputs, sizes: Sizes) -> Tensor:
    return _flash(i, sizes, max_start=0.0, dtype=torch.float32)


# -- puzzle 17: split-K matmul --------------------------------------------------------------------------

def _chunk_products(i: Inputs, sizes: Sizes) -> list[Tensor]:
    a, b, block = i["a"].double(), i["b"].double(), sizes["BK"]
    return [a[:, s:s + block] @ b[s:s + block] for s in range(0, a.shape[1], block)]


def splitk_every_part_whole_k(i: Inputs, sizes: Sizes) -> Tensor:
    """Every part walks the whole of K (range(0, K, BK)): z is SPLIT_K times a @ b."""
    return (sum(_chunk_products(i, sizes)) * sizes["SPLIT_K"]).float()


def splitk_parts_step_by_bk(i: Inputs, sizes: Sizes) -> Tensor:
    """Part s starts at chunk s but steps by BK, not BK * SPLIT_K: it takes every chunk from s on, so chunk c
    is added by min(c + 1, SPLIT_K) parts."""
    return sum(p * min(c + 1, sizes["SPLIT_K"]) for c, p in enumerate(_chunk_products(i, sizes))).float()


# -- puzzle 21: SGD with momentum over a list of tensors -------------------------------------------------

def _sgd(i: Inputs, sizes: Sizes, *, decay: bool = True, new_momentum: bool = True) -> Tensor:
    p, g, m = (i[name].double() for name in ("params", "grads", "moms"))
    moms = sizes["momentum"] * m + g + (sizes["weight_decay"] * p if decay else 0)
    return torch.stack([p - sizes["lr"] * (moms if new_momentum else m), moms]).float()


def sgd_without_weight_decay(i: Inputs, sizes: Sizes) -> Tensor:
    return _sgd(i, sizes, decay=False)  # the right output where wd = 0: never named there


def sgd_with_old_momentum(i: Inputs, sizes: Sizes) -> Tensor:
    return _sgd(i, sizes, new_momentum=False)


# -- puzzle 12: quantized matmul, 4-bit weights and shifts packed along the row ----------------------

def _quant_dot(i: Inputs, w: Tensor, shift: Tensor | None) -> Tensor:
    per_weight = lambda t: t.repeat_interleave(8, dim=1)  # noqa: E731 - one group -> its 8 weights
    scale = per_weight(i["scale"]).double()
    centred = w.double() - (per_weight(shift).double() if shift is not None else 0)
    return ((scale * centred) @ i["activation"].double()).float()


def quant_dot_without_shift(i: Inputs, sizes: Sizes) -> Tensor:
    return _quant_dot(i, _nibbles(i["weight"], 1), None)


def quant_dot_masked_first(i: Inputs, sizes: Sizes) -> Tensor:
    return _quant_dot(i, _nibbles(i["weight"], 1, mask_first=True), _nibbles(i["offset"], 1))


def quant_dot_weights_by_byte(i: Inputs, sizes: Sizes) -> Tensor:
    return _quant_dot(i, _nibbles(i["weight"], 1, shifts=BYTE_SHIFTS), _nibbles(i["offset"], 1))


def quant_dot_all_by_byte(i: Inputs, sizes: Sizes) -> Tensor:
    """8 bits a nibble in the weights and in the shifts (one unpacking helper used for both)."""
    return _quant_dot(i, _nibbles(i["weight"], 1, shifts=BYTE_SHIFTS), _nibbles(i["offset"], 1, shifts=BYTE_SHIFTS))


def quant_dot_shift_by_value(i: Inputs, sizes: Sizes) -> Tensor:
    """The shift of value k read at nibble k % 8 of word k // 64 (the value's nibble, not its group's)."""
    shifts = _nibbles(i["offset"], 1)  # N0 x MID/8, one per group
    mid = i["weight"].shape[1] * 8
    k = torch.arange(mid)
    per_value = shifts[:, (k // 64) * 8 + k % 8]  # N0 x MID
    w = _nibbles(i["weight"], 1).double() - per_value.double()
    scale = i["scale"].repeat_interleave(8, dim=1).double()
    return ((scale * w) @ i["activation"].double()).float()


# -- puzzle 13: pack int4 into int32, low nibble first --------------------------------------------------

def _pack(nibbles: Tensor, shifts: Tensor) -> Tensor:
    """Sum of nibble << shift over each run of 8 values, wrapped to int32 as the kernel's arithmetic is."""
    words = (nibbles.to(torch.int64).unflatten(-1, (-1, 8)) << shifts.to(torch.int64)).sum(-1) & 0xFFFFFFFF
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


def pack_high_nibble_first(i: Inputs, sizes: Sizes) -> Tensor:
    return _pack((i["x"].to(torch.int32) + 8) & 0xF, NIBBLE_SHIFTS.flip(0))


def pack_without_offset(i: Inputs, sizes: Sizes) -> Tensor:
    """The value's own two's-complement nibble, v & 0xF, where the statement stores v + 8."""
    return _pack(i["x"].to(torch.int32) & 0xF, NIBBLE_SHIFTS)


def pack_without_nibble_mask(i: Inputs, sizes: Sizes) -> Tensor:
    """x + 8 shifted as it is: the junk high nibble of each int8 spills into the next nibbles."""
    return _pack(i["x"].to(torch.int32) + 8, NIBBLE_SHIFTS)


# -- puzzle 14: unpack int4 along K ---------------------------------------------------------------------

def unpack_without_offset(i: Inputs, sizes: Sizes) -> Tensor:
    return _nibbles(i["qweight"], 0).to(torch.int8)


def unpack_masked_first(i: Inputs, sizes: Sizes) -> Tensor:
    return (_nibbles(i["qweight"], 0, mask_first=True) - 8).to(torch.int8)


def unpack_masked_in_place(i: Inputs, sizes: Sizes) -> Tensor:
    """(word & (0xF << 4n)) >> 4n: right but for the top nibble, whose arithmetic shift copies the sign bit."""
    words = i["qweight"][:, None, :]
    shifts = NIBBLE_SHIFTS[None, :, None]
    q = (words & (0xF << shifts)) >> shifts  # 0xF << 28 is negative in int32, as in the kernel
    return (q.flatten(0, 1) - 8).to(torch.int8)


# -- puzzle 15: int8 weight-only matrix-vector product ------------------------------------------------

def gemv_without_scale(i: Inputs, sizes: Sizes) -> Tensor:
    return (i["x"].double() @ i["weight"].double()).half()


# -- puzzle 18: GPTQ, qweight packed along K, qzeros along N -------------------------------------------

def _gptq(i: Inputs, zero: Tensor | None, *, scales: bool = True, group: int | None = None,
          rows_of: Tensor | None = None) -> Tensor:
    """a @ W with W = (q - zero) * scale; `zero` is K x N (None: 0), `group` the rows per scale, or `rows_of` the
    group of each row."""
    a, qweight, s = i["a"], i["qweight"], i["scales"]
    k = a.shape[1]
    group = group or k // s.shape[0]
    rows = torch.arange(k) // group if rows_of is None else rows_of
    q = _nibbles(qweight, 0).double()
    w = q - (zero.double() if zero is not None else 0)
    if scales:
        w = w * s.double()[rows.clamp(max=s.shape[0] - 1)]
    return (a.double() @ w).half()


def _zeros(i: Inputs) -> Tensor:
    """zero[k, n], unpacked along N as the statement says, for every row k of its group."""
    group = i["a"].shape[1] // i["scales"].shape[0]
    return _nibbles(i["qzeros"], 1).repeat_interleave(group, dim=0)


def gptq_without_plus_one(i: Inputs, sizes: Sizes) -> Tensor:
    return _gptq(i, _zeros(i))


def gptq_zero_as_eight(i: Inputs, sizes: Sizes) -> Tensor:
    return _gptq(i, torch.full_like(_zeros(i), 8))


def gptq_without_zero(i: Inputs, sizes: Sizes) -> Tensor:
    return _gptq(i, None)


def gptq_zeros_along_k(i: Inputs, sizes: Sizes) -> Tensor:
    """Each row's zero point read at nibble k % 8 (its place in a qweight word) instead of n % 8."""
    a, qzeros = i["a"], i["qzeros"]
    k, n = a.shape[1], qzeros.shape[1] * 8
    group = k // i["scales"].shape[0]
    rows = torch.arange(k)
    words = qzeros[rows // group][:, torch.arange(n) // 8]  # K x N: the word of (k, n)
    zero = (words >> (rows % 8 * 4)[:, None].to(torch.int32)) & 0xF
    return _gptq(i, zero + 1)


def gptq_without_scales(i: Inputs, sizes: Sizes) -> Tensor:
    return _gptq(i, _zeros(i) + 1, scales=False)


def _gptq_groups_of(i: Inputs, rows_per_group: int) -> Tensor:
    """Scales and zero points of row k taken from group k // rows_per_group (the last where that is past it)."""
    zero = _nibbles(i["qzeros"], 1)
    rows = (torch.arange(i["a"].shape[1]) // rows_per_group).clamp(max=zero.shape[0] - 1)
    return _gptq(i, zero[rows] + 1, group=rows_per_group)


def gptq_group_by_block(i: Inputs, sizes: Sizes) -> Tensor:
    """The group of row k taken as k // BK (the chunk) instead of k // G (where BK == G: the right output,
    which the verdict never names)."""
    return _gptq_groups_of(i, sizes["BK"])


def gptq_group_of_64(i: Inputs, sizes: Sizes) -> Tensor:
    """The group of row k taken as k // 64, a fixed group size (puzzle 12's offset word), instead of k // G."""
    return _gptq_groups_of(i, 64)


def _chunk_groups(sizes: Sizes) -> Tensor:
    """For each row k of K, the group of its chunk's first row: ⌊k0 / G⌋ with k0 = ⌊k / BK⌋ · BK (every part's
    chunks start at a multiple of BK)."""
    return (torch.arange(sizes["K"]) // sizes["BK"] * sizes["BK"]) // sizes["G"]


def gptq_group_of_chunk_start(i: Inputs, sizes: Sizes) -> Tensor:
    """`g = k0 // G` for the whole chunk: every row of a chunk takes the group of the chunk's first row (where G is
    a multiple of BK no chunk holds two groups: the right output, which the verdict never names)."""
    zero = _nibbles(i["qzeros"], 1)
    groups = _chunk_groups(sizes)
    return _gptq(i, zero[groups] + 1, rows_of=groups)


def gptq_chunks_across_groups(sizes: Sizes) -> str:
    """Which rows of which chunks took the wrong group at these sizes: the chunks that hold rows of two groups."""
    k, block, group = sizes["K"], sizes["BK"], sizes["G"]
    wrong = []
    for k0 in range(0, k, block):
        last = min(k0 + block, k) - 1
        if last // group != k0 // group:
            first_wrong = (k0 // group + 1) * group
            groups = f"{first_wrong // group}" + (f"…{last // group}" if last // group > first_wrong // group else "")
            wrong.append(f"chunk k0 = {k0} (rows {k0}…{last}) took group {k0 // group} for its rows "
                         f"{first_wrong}…{last}, which are in group {groups}")
    if not wrong:
        return ""
    more = f", and {len(wrong) - 2} more chunk{'s' if len(wrong) > 3 else ''}" if len(wrong) > 2 else ""
    return (f"here (G = {group}, BK = {block}) {'; '.join(wrong[:2])}{more}: the group of row k is k // G, with k "
            "the row's own index (k0 + tl.arange(0, BK))")


# -- puzzle 19: colour to grey through strides ---------------------------------------------------------

def grey_channels_one_apart(i: Inputs, sizes: Sizes) -> Tensor:
    """The green and blue bytes read at pixel + 1 and pixel + 2 (the channel stride taken as 1, a packed
    image's) instead of pixel + SC and pixel + 2·SC: channels-first, those are the next pixels' red bytes (where
    they fall between the view's elements, the access check reports them; SC = 1 gives the right output)."""
    x = i["x"]  # a view of the whole storage (cases.make_case keeps it so for slips like this one)
    packed = torch.as_strided(x, x.shape, (sizes["S1"], sizes["S0"], 1))
    return 0.2989 * packed[..., 0].float() + 0.5870 * packed[..., 1].float() + 0.1140 * packed[..., 2].float()


# -- puzzle 16: grouped tile order (no inputs: the sizes alone) ---------------------------------------

def _tiles(sizes: Sizes) -> tuple[Tensor, int, int]:
    tiles_m, tiles_n = -(-sizes["M"] // sizes["BM"]), -(-sizes["N"] // sizes["BN"])
    return torch.arange(tiles_m * tiles_n), tiles_m, tiles_n


def order_row_major(i: Inputs, sizes: Sizes) -> Tensor:
    pid, _, tiles_n = _tiles(sizes)
    return torch.stack([pid // tiles_n, pid % tiles_n], dim=1).to(torch.int32)


def order_full_last_band(i: Inputs, sizes: Sizes) -> Tensor:
    """Every band taken as GROUP_M rows high, the last one too (it may be shorter)."""
    pid, _, tiles_n = _tiles(sizes)
    group = sizes["GROUP_M"]
    inside = pid % (group * tiles_n)
    return torch.stack([(pid // (group * tiles_n)) * group + inside % group, inside // group], dim=1).to(torch.int32)


def order_row_from_pid(i: Inputs, sizes: Sizes) -> Tensor:
    """The tile row taken from pid % g instead of the program's position in its band (pid % (GROUP_M * TN)) % g:
    the same wherever g divides the band's first program id, wrong in a later short band."""
    pid, tiles_m, tiles_n = _tiles(sizes)
    group = sizes["GROUP_M"]
    first_m = (pid // (group * tiles_n)) * group
    height = torch.clamp(tiles_m - first_m, max=group)
    inside = pid % (group * tiles_n)
    return torch.stack([first_m + pid % height, inside // height], dim=1).to(torch.int32)
