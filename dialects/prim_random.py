"""prim's random ops: a seed drawn per run, and philox streams that depend only on it.

`prim.random_seed` is the one op with an effect: each time the compiled graph runs it
draws a fresh 64-bit seed from torch's default generator for the graph's device (the
runtime draws all of a graph's seeds with one `torch.randint`, runtime/random_seeds.py),
so results follow `torch.manual_seed` and differ from call to call. It is not Pure:
simplify neither merges two draws nor deletes one.

`prim.philox_uniform` and `prim.philox_normal` are pure functions of their seed (a 0-d
i64 tensor): element i (row-major) is drawn from philox 4x32-10 with the counter
`offset + i` (dialects/philox.py), as Triton's `tl.rand` / `tl.randn` would draw it.
The result is f32; the decompositions convert it to the dtype asked for. Being pure,
they fuse like elementwise ops (passes/fusion/random.py computes an element where it
is read, from `kernel.philox`), and a recomputation gives the same values.

Imported by dialects/prim.py, which registers these ops in the prim dialect.
"""

from __future__ import annotations

from collections.abc import Sequence

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from strata.dialects import philox
from strata.dialects.prim import CREATION_FORMAT, TensorOp, dims_attr, dims_of
from strata.dialects.types import Dim, TensorType, concrete, numel

SEED_TYPE = TensorType([], "i64")
# Seeds are drawn in [0, 2**63 - 1), as torch.randint's high bound must be an int64.
SEED_BOUND = 2**63 - 1


@irdl_op_definition
class RandomSeedOp(TensorOp):
    """A fresh seed (a 0-d i64 tensor) drawn from torch's default generator each time
    the graph runs."""

    name = "prim.random_seed"
    assembly_format = CREATION_FORMAT
    result = result_def()
    # A draw moves the generator: an effect, so that two draws are never merged into
    # one (cse) and a draw is never deleted (dce). It overrides the Pure it inherits
    # from PrimOp: xDSL joins the effects of an op's traits.
    traits = traits_def(MemoryWriteEffect())

    def __init__(self):
        super().__init__(result_types=[SEED_TYPE])

    def infer_type(self) -> Attribute:
        return SEED_TYPE

    def reference(self) -> torch.Tensor:
        return torch.randint(SEED_BOUND, (), dtype=torch.int64)


class PhiloxOp(TensorOp):
    """Base of the philox ops: a tensor of `shape` whose element i (row-major) is drawn
    with counter `offset + i` from `seed`, a 0-d i64 tensor; f32."""

    seed = operand_def()
    result = result_def()
    shape = prop_def(ArrayAttr)
    offset = prop_def(Attribute)

    def __init__(self, seed: SSAValue, shape: Sequence[Dim], offset: Dim = 0):
        super().__init__(
            operands=[seed],
            result_types=[TensorType(shape, "f32")],
            properties={"shape": dims_attr(shape), "offset": dims_attr([offset]).data[0]},
        )

    @property
    def offset_dim(self) -> Dim:
        return dims_of(ArrayAttr([self.offset]))[0]

    def infer_type(self) -> Attribute:
        return TensorType(dims_of(self.shape), "f32")

    def verify_(self) -> None:
        t = self.tensor(self.seed)
        if t.rank != 0 or t.dtype != "i64":
            raise VerifyException(f"{self.name}: the seed must be a 0-d i64 tensor, got {t}")
        offset = self.offset_dim
        if isinstance(offset, int) and offset < 0:
            raise VerifyException(f"{self.name}: the offset must not be negative, got {offset}")
        super().verify_()

    def words(self, seed: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The philox words of every element, as int32 tensors of the result's shape."""
        shape = concrete(dims_of(self.shape))
        (offset,) = concrete([self.offset_dim])
        counters = philox.linear_counters(numel(shape), offset).reshape(shape)
        return tuple(philox.as_int32(w) for w in philox.philox_words(seed, counters))


@irdl_op_definition
class PhiloxUniformOp(PhiloxOp):
    """f32 uniform in [0, 1), bit for bit what Triton's `tl.rand(seed, offset + i)` gives."""

    name = "prim.philox_uniform"

    def reference(self, seed: torch.Tensor) -> torch.Tensor:
        return philox.uniform_from_word(self.words(seed)[0])


@irdl_op_definition
class PhiloxNormalOp(PhiloxOp):
    """f32 standard normal: Box-Muller on the uniforms of philox words 0 and 1, as
    Triton's `tl.randn(seed, offset + i)`."""

    name = "prim.philox_normal"

    def reference(self, seed: torch.Tensor) -> torch.Tensor:
        w0, w1, _, _ = self.words(seed)
        return philox.normal_from_words(w0, w1)


PHILOX_OPS = (PhiloxUniformOp, PhiloxNormalOp)
RANDOM_OPS = (RandomSeedOp, *PHILOX_OPS)
