"""`kernel.philox`: the random op of the kernel level.

One word of philox 4x32-10 (dialects/philox.py) for a seed and a counter, both i64
scalars: in a kernel body the seed is loaded from the 0-d seed tensor and the counter
is a `kernel.index` (the element's linear index plus the prim op's offset), so each
point of the domain draws its own numbers and a recomputation draws the same ones.
The word is given as the i32 with its bits; the uniform and normal floats of
prim.philox_uniform / prim.philox_normal are computed from words by ordinary scalar
ops (passes/fusion/random.py). Registered in the kernel dialect by dialects/kernel.py.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, i32, i64
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

WORDS = 4


@irdl_op_definition
class PhiloxOp(IRDLOperation):
    """Word `word` (0 to 3) of philox 4x32-10 with key `seed` and counter `counter`
    (counter words: counter low, counter high, 0, 0), as i32 bits."""

    name = "kernel.philox"
    seed = operand_def(i64)
    counter = operand_def(i64)
    result = result_def(i32)
    word = prop_def(IntegerAttr)
    assembly_format = "$seed `,` $counter attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())

    def __init__(self, seed: SSAValue, counter: SSAValue, word: int):
        super().__init__(operands=[seed, counter], result_types=[i32], properties={"word": IntegerAttr(word, i64)})

    @property
    def word_index(self) -> int:
        return self.word.value.data

    def verify_(self) -> None:
        if not 0 <= self.word_index < WORDS:
            raise VerifyException(f"kernel.philox: word {self.word_index} is not one of 0..{WORDS - 1}")
