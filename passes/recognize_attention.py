"""recognize-attention: attention written out by hand, `softmax(q @ kᵀ · s [causal
mask]) @ v`, as one `strata::sdpa` call at the aten level.

Code that spells attention out (nanoGPT-style blocks, older model code) gives the graph
two batched products and a softmax over an [L, S] matrix of scores that goes through
memory between them. As `strata::sdpa` (which decompose lowers to `prim.sdpa`) it runs
torch's fused kernels (the blocked flash kernel on the CPU, flash, cuDNN or
memory-efficient attention on CUDA), which never build that matrix and, for a causal
mask, skip the masked half.

What AOTAutograd hands strata for `q @ k.transpose(-2, -1)` is a reshape of each
operand to 3-D (an `expand` that changes nothing, perhaps a `clone`, a `view`), a `bmm`,
and a `view` back to 4-D; the pass reads through those. What is recognized, and why it
is the same function:

- `C = Q @ Kᵀ` and `O = W @ V` over 4-D operands of equal batch dims (the rank torch's
  fused kernels take);
- scores `A = C / s`, `C * s` or `C` itself for a constant s (sdpa's `scale` = 1/s, s,
  1.0); a symbolic s is left alone (sdpa's scale is a number fixed at compile time);
- optionally `where(M, -inf, A)` (masked_fill's aten form) where M is provably True
  exactly above the diagonal, j > i, at every size (passes/causal_mask.py): sdpa's
  `is_causal=True`. No row is wholly masked, so no row is a NaN that sdpa would not
  give. Any other mask (a graph input, another diagonal, a finite fill) is left alone;
- `_softmax` over the last dim, perhaps between casts to f32 and back (CUDA autocast's
  softmax), then perhaps a `clone` (an inference dropout);
- each intermediate used only by the next step: attention weights returned, or kept
  for a backward graph, leave the ops as written;
- q, k and v of one floating dtype, which the result has too.

The result differs from the written-out form only by rounding: the product is scaled
inside the kernel (q·k·(1/s) rather than q·k/s) and the softmax is computed blockwise
in f32 (closer to exact than 16-bit scores rounded before a softmax).

A training graph's attention cannot be found here: the backward graph AOTAutograd
derives from the written-out form is written out too, and only an sdpa call in the
captured program gets the fused backward. So training graphs are recognized before
AOTAutograd, on Dynamo's graph (frontend/attention/attention_pattern.py,
docs/architecture.md says why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strata.dialects import aten
from strata.dialects.aten import AtenOp
from strata.dialects.attributes import graph_device
from strata.dialects.types import TensorType, sym
from strata.passes.causal_mask import is_causal
from strata.passes.provenance import with_source

FLOATS = ("f16", "bf16", "f32", "f64")
# Ops through which a value is the same tensor, element for element.
_SAME_VALUES = ("aten.clone.default", "aten.alias.default")
_TO_3D = ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")


def _op(v: SSAValue | None, *names: str) -> AtenOp | None:
    """v's defining aten op where it is one of `names`."""
    op = v.owner if isinstance(v, SSAValue) else None
    return op if isinstance(op, AtenOp) and op.signature.op_name in names else None


def _dims(v: SSAValue) -> list:
    return [sym(d) for d in v.type.dims] if isinstance(v.type, TensorType) else []


def _only_use(v: SSAValue) -> Operation | None:
    uses = list(v.uses)
    return uses[0].operation if len(uses) == 1 else None


def _source_tensor(v: SSAValue) -> SSAValue:
    """v before any op that leaves its values as they are (a clone, an alias, an
    expand to its own sizes)."""
    while True:
        op = _op(v, *_SAME_VALUES, "aten.expand.default")
        if op is None:
            return v
        x = op.bind()["self"]
        if op.signature.op_name == "aten.expand.default" and _dims(x) != _dims(v):
            return v
        v = x


def _as_4d(v3: SSAValue) -> SSAValue | None:
    """The 4-D tensor [b, h, m, n] that the bmm operand v3 [b·h, m, n] is a row-major
    reshape of (through no-op expands, clones and views), or None."""
    v = _source_tensor(v3)
    op = _op(v, *_TO_3D)
    if op is None:
        return None
    x = _source_tensor(op.bind()["self"])
    d3, d4 = _dims(v3), _dims(x)
    if len(d3) != 3 or len(d4) != 4 or d3[1:] != d4[2:] or (d4[0] * d4[1] - d3[0]).expand() != 0:
        return None
    return x


@dataclass
class _Product:
    """A 4-D product `out = a @ b` written as reshape, bmm, reshape."""

    out: SSAValue
    a: SSAValue
    b: SSAValue
    ops: list[Operation]


def _product(out: SSAValue) -> _Product | None:
    view = _op(out, *_TO_3D)
    if view is None:
        return None
    r = view.bind()["self"]
    bmm = _op(r, "aten.bmm.default")
    if bmm is None or _only_use(r) is not view:
        return None
    args = bmm.bind()
    a, b = _as_4d(args["self"]), _as_4d(args["mat2"])
    if a is None or b is None:
        return None
    batch = _dims(out)[:2]
    if len(_dims(out)) != 4 or _dims(a)[:2] != batch or _dims(b)[:2] != batch:
        return None
    return _Product(out, a, b, [view, bmm])


def _scale(op: AtenOp | None) -> float | None:
    """sdpa's scale for scores made by a mul.Scalar or div.Scalar op, or None."""
    if op is None:
        return None
    s = op.constant("other")
    if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or s == 0:
        return None
    return float(s) if op.signature.op_name == "aten.mul.Scalar" else 1.0 / s


def _is_minus_infinity(v: SSAValue) -> bool:
    op = _op(v, "aten.scalar_tensor.default", "aten.full.default")
    if op is None:
        return False
    value = op.constant("s" if op.signature.op_name == "aten.scalar_tensor.default" else "fill_value")
    return isinstance(value, float) and value == -math.inf


def _cast(v: SSAValue, dtype: str | None = None) -> SSAValue | None:
    """x where v = x converted to `dtype` (any, if None) and nothing else (a layout and
    device may be named, as `softmax(dtype=...)` names them, where they stay as they
    are), else None."""
    op = _op(v, "aten._to_copy.default")
    if op is None or set(op.argument_names()) - {"dtype", "layout", "device"}:
        return None
    layout, device = op.argument_attr("layout"), op.argument_attr("device")
    if (layout is not None and layout != StringAttr("torch.strided")) or (
            device is not None and not _graph_device_type(device, op)):
        return None
    if dtype is not None and v.type.dtype != dtype:
        return None
    return op.bind()["self"]


def _graph_device_type(device: Attribute, op: Operation) -> bool:
    """Whether `device` is of the graph's device type: CUDA autocast's cast to f32 names
    "cuda:0" where the graph says "cuda". Its result meets v in the product after the
    softmax, and a product of tensors on two devices raises in eager: in a program eager
    runs, the cast names the device its input is on. (The decompositions' on_graph_device
    asks more of a copy that changes the device alone, which is a transfer.)"""
    if not isinstance(device, StringAttr):
        return False
    own = graph_device(op)
    return own is not None and device.data.split(":")[0] == own


@dataclass
class Attention:
    """What an sdpa call needs to compute `out`, and the ops it replaces."""

    out: SSAValue
    q: SSAValue
    kt: SSAValue
    v: SSAValue
    is_causal: bool
    scale: float
    replaced: list[Operation]


def match(out: SSAValue) -> Attention | None:
    """The attention that computes `out`, or None where `out` is not one."""
    pv = _product(out)
    if pv is None or not isinstance(out.type, TensorType) or out.type.dtype not in FLOATS:
        return None
    replaced = list(pv.ops)
    # the attention weights: softmax(A) (a clone after it was read through by
    # _product), perhaps computed in f32 and cast back
    w = pv.a
    narrowed = _cast(w, out.type.dtype)
    in_f32 = narrowed is not None and narrowed.type.dtype == "f32"
    if in_f32:
        replaced.append(w.owner)
        w = narrowed
    softmax = _op(w, "aten._softmax.default")
    if softmax is None or softmax.constant("half_to_float") or softmax.constant("dim") not in (-1, 3):
        return None
    replaced.append(softmax)
    scores = softmax.bind()["self"]
    if in_f32:
        widened = _cast(scores, "f32")
        if widened is None or widened.type.dtype != out.type.dtype:
            return None
        replaced.append(scores.owner)
        scores = widened
    causal = False
    where = _op(scores, "aten.where.self")
    if where is not None:
        args = where.bind()
        mask = args["condition"]
        if not (_is_minus_infinity(args["self"]) and _dims(args["other"]) == _dims(scores)
                and _dims(mask)[-2:] == _dims(scores)[-2:] and is_causal(mask)):
            return None
        replaced.append(where)
        scores, causal = args["other"], True
    scale = 1.0
    scaling = _op(scores, "aten.mul.Scalar", "aten.div.Scalar")
    if scaling is not None:
        scale = _scale(scaling)
        if scale is None:
            return None
        replaced.append(scaling)
        scores = scaling.bind()["self"]
    qk = _product(scores)
    if qk is None:
        return None
    replaced += qk.ops
    # each step read only by the next: else the ops stay for their other readers
    for op in replaced[1:]:
        if any(_only_use(r) is None for r in op.results):
            return None
    q, kt, v = qk.a, qk.b, pv.b
    if not (q.type.dtype == kt.type.dtype == v.type.dtype == out.type.dtype):
        return None
    return Attention(out, q, kt, v, causal, scale, replaced)


def rewrite(found: Attention) -> None:
    """Replaces the ops `found` names with a strata::sdpa call; the mask's ops go when
    nothing else reads them."""
    from strata.dialects import strata_ops  # noqa: F401  (registers strata::sdpa)

    at = found.out.owner
    kt = found.kt
    b, h, e, s = kt.type.dims
    k_op = with_source(at, aten.build("aten::permute", {"self": kt, "dims": [0, 1, 3, 2]},
                                      [kt.type.with_dims([b, h, s, e])]))
    call = with_source(at, aten.build(
        "strata::sdpa",
        {"q": found.q, "k": k_op.results[0], "v": found.v, "attn_mask": None,
         "is_causal": found.is_causal, "scale": found.scale},
        [found.out.type],
    ))
    Rewriter.insert_op([k_op, call], InsertPoint.before(at))
    found.out.replace_all_uses_with(call.results[0])
    _erase_unused(found.replaced)


def _erase_unused(ops: list[Operation]) -> None:
    """Erases each op of `ops` (last first) and the aten ops that fed only it."""
    pending = list(ops)
    while pending:
        op = pending.pop(0)
        if op.parent is None or any(r.uses for r in op.results):
            continue
        operands = list(op.operands)
        op.detach()
        op.erase()
        pending += [x.owner for x in operands if isinstance(x.owner, AtenOp) and not x.uses]


@dataclass(frozen=True)
class RecognizeAttentionPass(ModulePass):
    name = "recognize-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for candidate in [o for o in op.walk() if isinstance(o, AtenOp) and o.signature.op_name in _TO_3D]:
            if candidate.parent is None:
                continue  # erased with an attention found before
            found = match(candidate.results[0])
            if found is not None:
                rewrite(found)
