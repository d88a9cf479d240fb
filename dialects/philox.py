"""Philox 4x32-10, the counter-based random number generator of strata's random ops,
as reference code in torch.

A random op's element is a pure function of a 64-bit seed and a 64-bit counter (the
element's linear index plus the op's offset): philox with key (seed low 32 bits, seed
high 32 bits) and counter words (counter low, counter high, 0, 0) gives four 32-bit
words. This is Triton's `tl.randint4x(seed, offset)` word for word, so that a uniform
float drawn here, in the kernel interpreter, in LLVM code and in Triton code is the
same bits everywhere (codegen/llvm_random.py and the `philox` helper of
codegen/triton_math.py implement the same rounds).

The values are held in int64 tensors (torch has no full uint32 arithmetic): a product
of two 32-bit words wraps modulo 2**64 in int64, which keeps its low 64 bits exact,
and masking recovers the high and low halves.

`uniform_from_word` and `normal_from_words` turn words into floats the way Triton's
`uint_to_uniform_float` and `pair_uniform_to_normal` do; passes/fusion/random.py
writes the same formulas as kernel ops.
"""

from __future__ import annotations

from strata.dialects.lazy_torch import torch

MASK32 = 0xFFFFFFFF
ROUNDS = 10
KEY_A, KEY_B = 0x9E3779B9, 0xBB67AE85  # added to the key after each round
ROUND_A, ROUND_B = 0xD2511F53, 0xCD9E8D57  # the round multipliers

# The largest value such that (2**31 - 1) * SCALE < 1 in f32: uniform floats are [0, 1).
UNIFORM_SCALE = 4.6566127342e-10
# Box-Muller: u1 is kept away from 0 so that log(u1) is finite.
NORMAL_MIN_U1 = 1.0e-7
TWO_PI = 6.283185307179586


def philox_words(seed: torch.Tensor, counter: torch.Tensor, rounds: int = ROUNDS) -> tuple[torch.Tensor, ...]:
    """The four 32-bit words (as int64 tensors with values in [0, 2**32)) of philox
    for each seed and counter (int64 tensors that broadcast together)."""
    seed = torch.as_tensor(seed, dtype=torch.int64)
    counter = torch.as_tensor(counter, dtype=torch.int64)
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    c0, c1 = counter & MASK32, (counter >> 32) & MASK32
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    for _ in range(rounds):
        hi_b, lo_b = _mul_hi_lo(ROUND_B, c2)
        hi_a, lo_a = _mul_hi_lo(ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = (k0 + KEY_A) & MASK32
        k1 = (k1 + KEY_B) & MASK32
    return c0, c1, c2, c3


def _mul_hi_lo(a: int, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The high and low 32 bits of the 64-bit product of 32-bit words a and b."""
    product = b * a  # exact modulo 2**64
    return (product >> 32) & MASK32, product & MASK32


def as_int32(word: torch.Tensor) -> torch.Tensor:
    """A 32-bit word as the int32 with its bits (what `kernel.philox` gives)."""
    return (word - ((word & 0x80000000) << 1)).to(torch.int32)


def uniform_from_word(word: torch.Tensor) -> torch.Tensor:
    """f32 in [0, 1) from int32 bits: x = bits, or ~bits where negative (so x in
    [0, 2**31)), times UNIFORM_SCALE, in f32."""
    x = word.to(torch.int32)
    x = torch.where(x < 0, ~x, x)
    return x.to(torch.float32) * torch.tensor(UNIFORM_SCALE, dtype=torch.float32)


def normal_from_words(w0: torch.Tensor, w1: torch.Tensor) -> torch.Tensor:
    """f32 N(0, 1) from two int32 words, by Box-Muller on their uniforms."""
    f32 = torch.float32
    u1 = torch.maximum(uniform_from_word(w0), torch.tensor(NORMAL_MIN_U1, dtype=f32))
    theta = uniform_from_word(w1) * torch.tensor(TWO_PI, dtype=f32)
    r = torch.sqrt(torch.log(u1) * torch.tensor(-2.0, dtype=f32))
    return r * torch.cos(theta)


def linear_counters(numel: int, offset: int = 0) -> torch.Tensor:
    """The counters of a tensor's elements in row-major order."""
    return torch.arange(numel, dtype=torch.int64) + offset
