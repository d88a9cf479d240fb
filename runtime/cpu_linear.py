"""f32 linear layers on the CPU through oneDNN, where it is the faster library.

A linear layer reaches the runtime as prim.addmm(bias, x, wᵀ) or prim.mm(x, wᵀ), which
torch.addmm / torch.mm run through its BLAS (MKL in the x86 wheels). On this project's
2-core AMD EPYC machines oneDNN's inner-product kernel (torch.ops.mkldnn._linear_pointwise,
the call TorchInductor makes for frozen CPU linear layers) ran the same products
1.08–1.83× faster from 2^24 multiply-adds up (1024×256×1024: 3.6 → 2.9 ms), and 10-20%
slower below 2^23, where its fixed cost of about 15 µs a call shows (docs/performance-history.md).
Its sums run in another order, as any two GEMM libraries' do: the error against
float64 measured 1–2.3× MKL's (the same O(K·eps) bound), well inside eager's tolerances.

oneDNN reads the weight as [n, k] rows; the product's second operand must therefore be
the transpose of a contiguous [n, k] tensor (a parameter, as a linear layer has),
checked on each call: any other layout runs torch's BLAS call as before. Its result
is a fresh tensor (the call takes no `out=`), so these products are not placed in
the memory plan's workspace (a fresh 4 MiB result measured no slower here).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# Multiply-adds (m·n·k) from which oneDNN is used: below this its per-call overhead
# outweighs its faster kernel (measurements above).
MIN_WORK = 1 << 24


def available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def onednn_product(op, device: torch.device) -> Callable[..., torch.Tensor] | None:
    """For a prim.mm or prim.addmm (1-d bias) of static f32 operands on the CPU large
    enough to gain: a callable with the op's operands that runs it through oneDNN when
    the second operand is a transposed contiguous matrix, through torch's BLAS call
    otherwise. None for every other op."""
    from strata.dialects import prim  # here: an ahead-of-time package runs _mm and _addmm without the dialects
    from strata.dialects.types import sym

    if device.type != "cpu" or not isinstance(op, prim.MmOp | prim.AddmmOp) or not available():
        return None
    a, b = op.a.type, op.b.type
    if a.dtype != "f32" or b.dtype != "f32":
        return None
    dims = [sym(d) for d in (a.dims[0], a.dims[1], b.dims[1])]
    if not all(d.is_Integer for d in dims) or int(dims[0] * dims[1] * dims[2]) < MIN_WORK:
        return None
    if isinstance(op, prim.AddmmOp):
        bias = op.bias.type
        if bias.dtype != "f32" or bias.rank != 1 or sym(bias.dims[0]) != dims[2]:
            return None
        return _addmm
    return _mm


def _weight(b: torch.Tensor) -> torch.Tensor | None:
    """b's transpose when it is a contiguous [n, k] matrix (oneDNN's weight layout)."""
    w = b.t()
    return w if w.is_contiguous() else None


def _linear(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """a @ wᵀ (+ bias) by oneDNN's inner product, the bias added before rounding."""
    return torch.ops.mkldnn._linear_pointwise(a, w, bias, "none", [], "")


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    w = _weight(b)
    return torch.mm(a, b) if w is None else _linear(a, w, None)


def _addmm(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    w = _weight(b)
    return torch.addmm(bias, a, b) if w is None else _linear(a, w, bias)


onednn_mm, onednn_addmm = _mm, _addmm  # for runtime/package_runner.py
