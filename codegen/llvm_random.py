"""`kernel.philox` in LLVM IR: philox 4x32-10 on i32 words, across lanes.

The same rounds as dialects/philox.py (and Triton's `tl.randint4x`): key (seed low,
seed high), counter words (counter low, counter high, 0, 0); each round multiplies two
words by the round constants into 64-bit products, whose high halves are mixed with
the other words and the key, and raises the key. A counter that differs between lanes
makes every word a vector `<lanes x i32>` (the seed stays a scalar, splatted where it
meets them): the multiplies are `zext` to i64 and `mul`, which x86 does as vpmuludq,
lanes at once. The first round's multiplications of the zero words fold away.
"""

from __future__ import annotations

from llvmlite import ir

from strata.codegen.llvm_lanes import I32, I64, like, unify
from strata.dialects import philox


def _i32(value: int) -> int:
    """A 32-bit word as the signed value LLVM's i32 constants take."""
    return value - (1 << 32) if value >= 1 << 31 else value


def _word(b: ir.IRBuilder, v: ir.Value, shift: int) -> ir.Value:
    """Bits shift … shift + 31 of an i64 (scalar or lanes) as an i32."""
    if shift:
        v = b.lshr(v, ir.Constant(v.type, shift))
    return b.trunc(v, like(I32, v))


def _mul_hi_lo(b: ir.IRBuilder, a: int, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The high and low words of the 64-bit product of constant word a and words x."""
    wide = b.mul(b.zext(x, like(I64, x)), ir.Constant(like(I64, x), a))
    return _word(b, wide, 32), b.mul(x, ir.Constant(x.type, _i32(a)))


def emit_philox(b: ir.IRBuilder, seed: ir.Value, counter: ir.Value, word: int) -> ir.Value:
    """Word `word` of philox(seed, counter), as an i32 (or lanes of them)."""
    k0, k1 = _word(b, seed, 0), _word(b, seed, 32)
    c0, c1 = _word(b, counter, 0), _word(b, counter, 32)
    zero = ir.Constant(c0.type, 0)
    c2, c3 = zero, zero
    for _ in range(philox.ROUNDS):
        hi_b, lo_b = _mul_hi_lo(b, philox.ROUND_B, c2)
        hi_a, lo_a = _mul_hi_lo(b, philox.ROUND_A, c0)
        mixed_b, key0 = unify(b, [b.xor(hi_b, c1), k0])
        mixed_a, key1 = unify(b, [b.xor(hi_a, c3), k1])
        c0, c1, c2, c3 = b.xor(mixed_b, key0), lo_b, b.xor(mixed_a, key1), lo_a
        k0 = b.add(k0, ir.Constant(k0.type, _i32(philox.KEY_A)))
        k1 = b.add(k1, ir.Constant(k1.type, _i32(philox.KEY_B)))
    return (c0, c1, c2, c3)[word]
