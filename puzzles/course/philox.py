"""Triton's random numbers (`tl.rand(seed, offsets)`), computed in PyTorch, bit for bit.

`tl.rand` is counter-based: the number for one element is a pure function of the seed and the element's
offset (no state is carried from one call to the next), so a kernel that knows both can draw it again
later, which is what lets a dropout backward regenerate the forward's mask instead of storing it. The
generator is Philox 4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC 2011), as `triton/language/random.py` implements it:

- the counter is four 32-bit words: the offset's low word, its high word (0 for an int32 offset), 0, 0;
- the key is two 32-bit words: the seed, taken as 64 bits (an int32 seed sign-extended), low word first;
- each round multiplies two of the words by fixed constants, mixes the 64-bit products' halves with the
  other words and the key, and adds fixed constants to the key;
- the first word of the result, read as a signed int32 and folded onto [0, 2^31) (`-x - 1` for a negative
  x), times a float32 constant just under 2^-31, is the uniform number in [0, 1).

PyTorch has no unsigned 32-bit multiply, so the words are kept in int64 tensors in [0, 2^32), and each
product of two words is formed from 16-bit halves so that no intermediate passes 2^63. Every operation
here is exact integer arithmetic except the last multiply, one float32 rounding, as on a GPU: the spec of
puzzle 24 draws exactly the numbers the kernel draws, on a CPU and on a GPU
(tests/course/test_dropout_layernorm.py checks both, against `tl.rand` itself).
"""

from __future__ import annotations

import torch
from torch import Tensor

ROUNDS = 10
KEY_STEP = (0x9E3779B9, 0xBB67AE85)  # added to the two key words after every round
MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)  # the round's multipliers of counter words 0 and 2
WORD = 0xFFFFFFFF
# The largest float32 that keeps (2^31 - 1) times it below 1.0: the uniform number's scale.
UNIFORM_SCALE = 4.6566127342e-10


def _mul_halves(constant: int, word: Tensor) -> tuple[Tensor, Tensor]:
    """(high, low) 32-bit halves of constant * word, both < 2^32; word in [0, 2^32)."""
    low16, high16 = word & 0xFFFF, word >> 16
    low_product = constant * low16  # < 2^48
    high_product = constant * high16  # < 2^48
    # constant * word = high_product * 2^16 + low_product
    high = (high_product + (low_product >> 16)) >> 16
    low = (((high_product & 0xFFFF) << 16) + low_product) & WORD
    return high, low


def philox_words(seed: Tensor | int, offsets: Tensor) -> Tensor:
    """The first 32-bit word of Philox 4x32-10 for each offset (int64 tensor, values in [0, 2^32)), as
    `tl.randint(seed, offsets)` gives it before its cast to int32. `seed`: an int or an integer tensor that
    broadcasts against `offsets` (one seed per row: shape (rows, 1))."""
    seed = torch.as_tensor(seed, dtype=torch.int64, device=offsets.device)
    offsets = offsets.to(torch.int64)
    c0, c1 = offsets & WORD, (offsets >> 32) & WORD
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    k0, k1 = seed & WORD, (seed >> 32) & WORD  # the seed as 64 bits: an int32's sign fills the high word
    for _ in range(ROUNDS):
        high_a, low_a = _mul_halves(MULTIPLIERS[0], c0)
        high_b, low_b = _mul_halves(MULTIPLIERS[1], c2)
        c0, c1, c2, c3 = high_b ^ c1 ^ k0, low_b, high_a ^ c3 ^ k1, low_a
        k0, k1 = (k0 + KEY_STEP[0]) & WORD, (k1 + KEY_STEP[1]) & WORD
    return c0


def uniform(words: Tensor) -> Tensor:
    """32-bit words to float32 in [0, 1), as Triton's `uint_to_uniform_float`."""
    signed = torch.where(words >= 1 << 31, words - (1 << 32), words)  # the word read as an int32
    folded = torch.where(signed < 0, -signed - 1, signed).to(torch.int32)
    return folded.to(torch.float32) * torch.tensor(UNIFORM_SCALE, dtype=torch.float32, device=words.device)


def rand(seed: Tensor | int, offsets: Tensor) -> Tensor:
    """`tl.rand(seed, offsets)`: one float32 in [0, 1) per offset."""
    return uniform(philox_words(seed, offsets))
