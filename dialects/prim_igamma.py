"""prim.igamma and prim.igammac: the regularized lower and upper incomplete gamma
functions P(a, x) and Q(a, x), binary elementwise ops on floats whose scalar code runs
ATen's series and continued fractions (loops whose length depends on the element).

They join prim.py's ELEMENTWISE table (arity 2, float operands, float result); their
references are torch's own kernels, which compute f16/bf16 in f32 and round once.
Code generation: codegen/llvm_igamma.py and codegen/triton_igamma.py.
"""

from __future__ import annotations

from strata.dialects.lazy_torch import torch, torch_fn

from strata.dialects.types import is_float

# name: (arity, operand dtype rule, result is bool, reference), as in prim.ELEMENTWISE
IGAMMA_OPS = {
    "igamma": (2, is_float, False, torch_fn("igamma")),
    "igammac": (2, is_float, False, torch_fn("igammac")),
}
