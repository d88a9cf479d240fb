"""Lowering prim.philox_uniform / prim.philox_normal at one element of a kernel.

An element is computed where it is read, like an elementwise op: its counter is its
row-major linear index in the op's shape plus the op's offset (a `kernel.index`), its
seed the 0-d seed tensor loaded at index 0, and `kernel.philox` gives the words. The
floats are then made of ordinary scalar ops, in the order of dialects/philox.py's
`uniform_from_word` and `normal_from_words` (the prim ops' references), so that the
kernel interpreter gives the reference's bits, and each code generator the same
bits for uniforms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import SSAValue

from strata.dialects import kernel as kd
from strata.dialects import philox, prim
from strata.dialects.kernel_random import PhiloxOp as KernelPhiloxOp
from strata.dialects.prim_random import PhiloxNormalOp, PhiloxOp
from strata.dialects.types import sym
from strata.passes.fusion.indexing import Index, contiguous_strides, offset
from strata.passes.fusion.plan import dims_of

if TYPE_CHECKING:
    from strata.passes.fusion.lower import KernelBuilder

EW = prim.ELEMENTWISE_OPS


def philox_at(k: KernelBuilder, op: PhiloxOp, index: Index) -> SSAValue:
    """The f32 scalar of a philox op at `index`."""
    seed = k.value_at(op.seed, ())
    dims = dims_of(op.result)
    counter = k.add(kd.IndexOp(sym(op.offset_dim) + offset(index, dims, contiguous_strides(dims))))
    word0 = k.add(KernelPhiloxOp(seed, counter, 0))
    if not isinstance(op, PhiloxNormalOp):
        return uniform_from_word(k, word0)
    word1 = k.add(KernelPhiloxOp(seed, counter, 1))
    return normal_from_words(k, word0, word1)


def uniform_from_word(k: KernelBuilder, word: SSAValue) -> SSAValue:
    """f32 in [0, 1): (word < 0 ? ~word : word) * UNIFORM_SCALE."""
    negative = k.add(EW["lt"](word, k.constant(0, "i32")))
    x = k.add(prim.WhereOp(negative, k.add(EW["bitwise_not"](word)), word))
    return k.add(EW["mul"](k.convert(x, "f32"), k.constant(philox.UNIFORM_SCALE, "f32")))


def normal_from_words(k: KernelBuilder, word0: SSAValue, word1: SSAValue) -> SSAValue:
    """Box-Muller: sqrt(log(max(u0, 1e-7)) * -2) * cos(u1 * 2pi)."""
    u0 = k.add(EW["maximum"](uniform_from_word(k, word0), k.constant(philox.NORMAL_MIN_U1, "f32")))
    theta = k.add(EW["mul"](uniform_from_word(k, word1), k.constant(philox.TWO_PI, "f32")))
    r = k.add(EW["sqrt"](k.add(EW["mul"](k.add(EW["log"](u0)), k.constant(-2.0, "f32")))))
    return k.add(EW["mul"](r, k.add(EW["cos"](theta))))
